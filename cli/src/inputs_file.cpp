#include "inputs_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "errors.h"

namespace rlx::cli {

TensorMap read_inputs_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw CliError(fmt::format("inputs file '{}' does not exist", path),
                   "give a safetensors file holding one tensor per graph input");
  return read_safetensors(path);
}

ImportOptions import_options_for(const TensorMap& inputs) {
  ImportOptions options;
  for (const auto& [name, t] : inputs) options.input_shapes.emplace(name, t.shape());
  return options;
}

NamedTensors match_inputs(const Graph& graph, const TensorMap& file, const std::string& path) {
  NamedTensors inputs;
  std::string expected, held;
  for (const auto& [name, t] : file) held += (held.empty() ? "" : ", ") + name;
  for (ValueId v : graph.inputs) {
    const Value& value = graph.values[v];
    expected += (expected.empty() ? "" : ", ") + value.name + " " + value.type.str();
    auto it = file.find(value.name);
    if (it == file.end())
      throw CliError(fmt::format("input '{}' ({}) is not in {} (it holds: {})", value.name,
                                 value.type.str(), path, held.empty() ? "no tensors" : held),
                     "write a tensor named after each graph input into the --inputs file");
    inputs.emplace(value.name, it->second);
  }
  for (const auto& [name, t] : file)
    if (!inputs.count(name))
      throw CliError(fmt::format("{} holds tensor '{}', which is not an input of the model "
                                 "(its inputs: {})",
                                 path, name, expected.empty() ? "none" : expected),
                     "remove it from the --inputs file, or check the model");
  return inputs;
}

}  // namespace rlx::cli
