#include "program_runner.h"

#include <fmt/format.h>

#include <stdexcept>

#include "rlx/core/safetensors.h"

namespace rlx::mlx_target::test {

namespace fs = std::filesystem;

namespace {

// The tools this build used (tests/CMakeLists.txt of the plugin passes them): the program is
// built with the same compiler and generator, against the same MLX package.
const char* const kCmake = RLX_MLX_TEST_CMAKE;
const char* const kCompiler = RLX_MLX_TEST_CXX;
const char* const kGenerator = RLX_MLX_TEST_GENERATOR;
const char* const kMakeProgram = RLX_MLX_TEST_MAKE_PROGRAM;
const char* const kMlxDir = RLX_MLX_CMAKE_DIR;

cli::test::ProcessResult run_cmake(const std::vector<std::string>& args) {
  return cli::test::run_process(kCmake, args);
}

}  // namespace

std::string build_tools_missing() {
  if (!fs::exists(kCmake)) return fmt::format("cmake is not at {} (the build's CMake)", kCmake);
  if (!fs::exists(kCompiler))
    return fmt::format("the C++ compiler is not at {} (the build's compiler)", kCompiler);
  if (!fs::exists(fs::path(kMlxDir) / "MLXConfig.cmake"))
    return fmt::format("MLX's CMake package is not in {} any more", kMlxDir);
  return "";
}

BuiltProgram::BuiltProgram(const Graph& mir) {
  fs::create_directories(source_dir());
  artifacts_ = rlx::test::target_named("mlx")->emit_mir(mir, source_dir());
  const fs::path build = dir_.path() / "build";
  std::vector<std::string> configure = {
      "-S", source_dir().string(), "-B", build.string(), "-G", kGenerator,
      std::string("-DCMAKE_CXX_COMPILER=") + kCompiler, std::string("-DMLX_DIR=") + kMlxDir,
      // A build type of no flags of its own: only -O1, to
      // keep the test's build short on a 2-core machine.
      "-DCMAKE_BUILD_TYPE=RlxTest", "-DCMAKE_CXX_FLAGS=-O1"};
  if (*kMakeProgram) configure.push_back(std::string("-DCMAKE_MAKE_PROGRAM=") + kMakeProgram);
  for (const auto& step : {configure, std::vector<std::string>{"--build", build.string()}}) {
    cli::test::ProcessResult r = run_cmake(step);
    if (r.exit_code != 0)
      throw std::runtime_error(
          fmt::format("cmake {} failed (exit {}):\n{}\n{}", step.at(0), r.exit_code, r.out, r.err));
  }
}

cli::test::ProcessResult BuiltProgram::run(const NamedTensors& inputs,
                                           NamedTensors& outputs) const {
  const fs::path in = dir_.path() / "inputs.safetensors";
  const fs::path out = dir_.path() / "outputs.safetensors";
  fs::remove(out);
  write_safetensors(in, TensorMap(inputs.begin(), inputs.end()));
  cli::test::ProcessResult r = cli::test::run_process((dir_.path() / "build" / "model").string(),
                                                      {in.string(), out.string()});
  if (r.exit_code == 0) {
    TensorMap read = read_safetensors(out);
    outputs = NamedTensors(read.begin(), read.end());
  }
  return r;
}

}  // namespace rlx::mlx_target::test
