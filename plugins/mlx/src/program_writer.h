// `rlx compile --target mlx -o DIR`: what the target writes for a specialised graph.
#pragma once
#include <filesystem>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::mlx_target {

std::vector<Artifact> write_program(const Graph& g, const std::filesystem::path& dir);

}  // namespace rlx::mlx_target
