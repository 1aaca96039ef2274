#include "program_source.h"

#include <fmt/format.h>

namespace rlx::mlx_target {

namespace {

// Before the graph: what the program is, how to build and run it, and the includes.
constexpr const char* kPreamble =
    R"(// Graph @{0} as a standalone program against Apple MLX's C++ API, written by
// `rlx compile --target mlx`: forward() makes the same mlx::core calls the mlx target makes when
// it runs the graph, and main() reads the inputs and the weights from safetensors files.
//
//   cmake -S . -B build -DMLX_DIR=<MLX prefix>/share/cmake/MLX && cmake --build build
//   build/model INPUTS.safetensors OUTPUTS.safetensors [WEIGHTS.safetensors]
//
// INPUTS holds every graph input under its name, with exactly the dtype and shape below (the
// graph is specialised: every dim is fixed); OUTPUTS receives every graph output under its
// name. WEIGHTS defaults to the weights.safetensors written beside this file (CMakeLists.txt
// compiles its path in as RLX_MODEL_WEIGHTS). To embed the model, call forward() with the
// inputs in order and the loaded weights, evaluate what it returns and call check_indices().
#include <mlx/mlx.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#ifndef RLX_MODEL_WEIGHTS
#define RLX_MODEL_WEIGHTS "weights.safetensors"
#endif

namespace mx = mlx::core;

namespace model {{

struct TensorSpec {{
  const char* name;
  mx::Dtype dtype;
  mx::Shape shape;
}};

)";

// After the graph: the index check and main().
constexpr const char* kEpilogue = R"(
// MLX does not check indices (the graph clamps them to stay in bounds), so forward() also
// returns, for each gather and scatter, the first position whose index is out of range (the
// index count when none is) and that index; this raises the error rlx raises.
void check_indices(const std::vector<mx::array>& results) {
  for (size_t c = 0; c < kIndexChecks.size(); ++c) {
    const IndexCheck& check = kIndexChecks[c];
    const int64_t position = results.at(kOutputs.size() + 2 * c).item<int64_t>();
    if (position >= check.count) continue;
    const int64_t index = results.at(kOutputs.size() + 2 * c + 1).item<int64_t>();
    throw std::out_of_range(std::string(check.op) + ": index " + std::to_string(index) +
                            " (at position " + std::to_string(position) +
                            " of the indices) is out of range for an axis of size " +
                            std::to_string(check.axis_size));
  }
}

}  // namespace model

namespace {

std::string describe(mx::Dtype dtype, const mx::Shape& shape) {
  std::ostringstream text;
  text << dtype << "[";
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << "]";
  return text.str();
}

// The graph's inputs from `file`, in forward()'s order, each checked against its spec.
std::vector<mx::array> read_inputs(const std::string& file) {
  std::unordered_map<std::string, mx::array> given = mx::load_safetensors(file).first;
  std::vector<mx::array> inputs;
  for (const model::TensorSpec& spec : model::kInputs) {
    auto it = given.find(spec.name);
    if (it == given.end())
      throw std::invalid_argument(file + " has no tensor '" + spec.name + "': the graph takes " +
                                  describe(spec.dtype, spec.shape) + " under that name");
    const mx::array& a = it->second;
    if (a.dtype() != spec.dtype || a.shape() != spec.shape)
      throw std::invalid_argument(file + ": '" + spec.name + "' is " +
                                  describe(a.dtype(), a.shape()) + "; the graph takes " +
                                  describe(spec.dtype, spec.shape));
    inputs.push_back(a);
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s INPUTS.safetensors OUTPUTS.safetensors [WEIGHTS.safetensors]\n",
                 argv[0]);
    for (const model::TensorSpec& spec : model::kInputs)
      std::fprintf(stderr, "  input %s: %s\n", spec.name, describe(spec.dtype, spec.shape).c_str());
    return 2;
  }
  try {
    const std::string weights_file = argc == 4 ? argv[3] : RLX_MODEL_WEIGHTS;
    const std::unordered_map<std::string, mx::array> weights =
        mx::load_safetensors(weights_file).first;
    std::vector<mx::array> results = model::forward(read_inputs(argv[1]), weights);
    for (size_t i = 0; i < model::kOutputs.size(); ++i) results[i] = mx::contiguous(results[i]);
    mx::eval(results);
    model::check_indices(results);
    std::unordered_map<std::string, mx::array> outputs;
    for (size_t i = 0; i < model::kOutputs.size(); ++i)
      outputs.insert({model::kOutputs[i].name, results[i]});
    mx::save_safetensors(argv[2], outputs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  return 0;
}
)";

std::string spec_table(const char* what, const char* name,
                       const std::vector<ProgramTensor>& tensors) {
  std::string text =
      fmt::format("// The graph's {}.\nconst std::vector<TensorSpec> {} = {{\n", what, name);
  for (const ProgramTensor& t : tensors)
    text += fmt::format("    {{{}, {}, {}}},\n", t.name, t.dtype, t.shape);
  return text + "};\n";
}

std::string check_table(const std::vector<IndexCheck>& checks) {
  std::string text =
      "struct IndexCheck {\n  const char* op;\n  int64_t count;\n  int64_t axis_size;\n};\n"
      "const std::vector<IndexCheck> kIndexChecks = {\n";
  for (const IndexCheck& c : checks)
    text += fmt::format("    {{\"{}\", {}, {}}},\n", c.op, c.count, c.axis_size);
  return text + "};\n";
}

std::string forward(const ProgramParts& parts) {
  std::string text = fmt::format(
      "\n// Graph @{}: the outputs in kOutputs' order, then two i64 scalars per index check.\n"
      "std::vector<mx::array> forward(const std::vector<mx::array>& inputs,\n"
      "                               const std::unordered_map<std::string, mx::array>& "
      "weights) {{\n",
      parts.graph);
  for (const std::string& line : parts.body) text += "  " + line + "\n";
  text += "  return {";
  for (size_t i = 0; i < parts.results.size(); ++i) text += (i ? ", " : "") + parts.results[i];
  return text + "};\n}\n";
}

}  // namespace

std::string program_source(const ProgramParts& parts) {
  return fmt::format(kPreamble, parts.graph) +
         spec_table("inputs, in the order forward() takes them", "kInputs", parts.inputs) +
         spec_table("outputs, in the order forward() returns them", "kOutputs", parts.outputs) +
         check_table(parts.checks) + forward(parts) + kEpilogue;
}

std::string program_cmake(const std::string& graph) {
  return fmt::format(
      R"(# Builds model.cpp: graph @{} as a standalone program against Apple MLX's C++ API, written
# by `rlx compile --target mlx`. MLX_DIR names the folder holding MLXConfig.cmake,
# <prefix>/share/cmake/MLX (a Homebrew or source install; for PyPI's mlx and mlx-cpu wheels the
# prefix is <site-packages>/mlx).
#   cmake -S . -B build -DMLX_DIR=<prefix>/share/cmake/MLX && cmake --build build
#   build/model INPUTS.safetensors OUTPUTS.safetensors [WEIGHTS.safetensors]
cmake_minimum_required(VERSION 3.20)
project(rlx_mlx_model LANGUAGES CXX)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()
find_package(MLX CONFIG REQUIRED)
add_executable(model model.cpp)
target_link_libraries(model PRIVATE mlx)
target_compile_features(model PRIVATE cxx_std_20)
# The weights written beside model.cpp, read when the command line names none.
target_compile_definitions(model PRIVATE
  RLX_MODEL_WEIGHTS="${{CMAKE_CURRENT_SOURCE_DIR}}/weights.safetensors")
)",
      graph);
}

}  // namespace rlx::mlx_target
