#include "inputs_file.h"

#include <fmt/format.h>

#include <filesystem>

#include "errors.h"

namespace rlx::cli {
namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// Token ids written as i32 (as many tokenizers and numpy defaults give them) for a model that
// takes i64: every i32 is an i64, so widening loses nothing. Nothing else is converted: a
// narrowing or a float change would alter what the model computes.
Tensor widen_i32(const Tensor& t) {
  Tensor wide(DType::kI64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) wide.as<int64_t>()[i] = t.as<int32_t>()[i];
  return wide;
}

}  // namespace

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
  std::vector<std::string> expected, names, missing, extra;
  std::string held;
  for (const auto& [name, t] : file)
    held += fmt::format("{}{} {}{}", held.empty() ? "" : ", ", name, dtype_name(t.dtype()),
                        t.shape_str());
  for (ValueId v : graph.inputs) {
    const Value& value = graph.values[v];
    names.push_back(value.name);
    expected.push_back(value.name + " " + value.type.str());
    auto it = file.find(value.name);
    if (it == file.end()) {
      missing.push_back(value.name);
      continue;
    }
    Tensor t = it->second;
    if (t.dtype() == DType::kI32 && value.type.dtype == DType::kI64) {
      t = widen_i32(t);
      print_note(fmt::format("input '{}' is i32 in {}; widened to the i64 the model takes",
                             value.name, path));
    }
    inputs.emplace(value.name, t);
  }
  auto listed = [](const std::vector<std::string>& items) {
    std::string out;
    for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
    return out.empty() ? std::string("none") : out;
  };
  if (!missing.empty()) {
    std::string what;
    for (ValueId v : graph.inputs)
      for (const std::string& m : missing)
        if (graph.values[v].name == m)
          what += fmt::format("{}'{}' ({})", what.empty() ? "" : ", ", m, graph.type(v).str());
    throw CliError(fmt::format("{} {} {} not in {}\n  the model's inputs: {}\n  missing: {}\n"
                               "  {} holds: {}",
                               missing.size() == 1 ? "input" : "inputs", what,
                               missing.size() == 1 ? "is" : "are", path, listed(expected),
                               listed(missing), path, held.empty() ? "no tensors" : held),
                   "write a tensor named after each missing input into the --inputs file "
                   "(`rlx info MODEL` lists the inputs)");
  }
  for (const auto& [name, t] : file)
    if (!inputs.count(name)) extra.push_back(name);
  if (!extra.empty())
    print_warning(
        fmt::format("{} holds {} {}, which the model does not take; {} unused (the "
                    "model's inputs: {})",
                    path, extra.size() == 1 ? "tensor" : "tensors", quoted_list(extra),
                    extra.size() == 1 ? "it is" : "they are", listed(names)));
  return inputs;
}

}  // namespace rlx::cli
