// `rlx compile --target mlx -o DIR`: what the target writes for a specialised graph. model.cpp, a
// standalone C++ program against Apple MLX's API that makes the calls the target makes to run
// the graph (mlx_calls.h); weights.safetensors, the graph's weights and constants it reads;
// CMakeLists.txt, which builds it against an MLX install (find_package(MLX)); model.mir, the
// graph's MIR text. A graph the program cannot express (a while loop) is refused by name.
#pragma once
#include <filesystem>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::mlx_target {

std::vector<Artifact> write_program(const Graph& g, const std::filesystem::path& dir);

}  // namespace rlx::mlx_target
