// The standalone program `rlx compile --target mlx -o DIR` writes (plugins/mlx/src/
// program_writer.h), built as its CMakeLists.txt says a user builds it (CMake,
// find_package(MLX)) against the MLX the plugin was built with, and run on safetensors files.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "process.h"
#include "rlx/core/graph.h"
#include "rlx/core/runtime.h"
#include "rlx/core/target.h"
#include "test_support.h"

namespace rlx::mlx_target::test {

// Why the program cannot be built here (no cmake, no C++ compiler, no MLX package), or "".
std::string build_tools_missing();

class BuiltProgram {
 public:
  // Emits `mir` (a specialised MIR graph) with the mlx target into a fresh folder and builds it
  // there at -O1; throws with CMake's output when configuring or building fails.
  explicit BuiltProgram(const Graph& mir);

  const std::vector<Artifact>& artifacts() const { return artifacts_; }
  std::filesystem::path source_dir() const { return dir_.path() / "program"; }
  // Runs the program on `inputs` (written to a safetensors file); its outputs are read back into
  // `outputs` when it exits with 0.
  cli::test::ProcessResult run(const NamedTensors& inputs, NamedTensors& outputs) const;

 private:
  rlx::test::TempDir dir_;
  std::vector<Artifact> artifacts_;
};

}  // namespace rlx::mlx_target::test
