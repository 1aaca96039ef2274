#include "inputs_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "errors.h"
#include "rlx/core/frozen_inputs.h"
#include "rlx/core/spelling.h"
#include "json_inputs.h"
#include "numpy_files.h"
#include "options.h"

namespace rlx::cli {
namespace {

constexpr const char* kInputHint =
    "give it as NAME=1,2,3 (shaped by --input-shape NAME=2x8) or NAME=@FILE.npy";

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? std::string("none") : out;
}

// Token ids written as i32 (as many tokenizers and numpy defaults give them) for a model that
// takes i64: every i32 is an i64, so widening loses nothing. Nothing else is converted: a
// narrowing or a float change would alter what the model computes.
Tensor widen_i32(const Tensor& t) {
  Tensor wide(DType::kI64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) wide.as<int64_t>()[i] = t.as<int32_t>()[i];
  return wide;
}

void read_file(const std::string& path, const FolderReader& read_folder, GivenInputs& into) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw CliError(fmt::format("inputs file '{}' does not exist", path),
                   "give a .safetensors, .npz or .json file holding one tensor per graph input");
  if (std::filesystem::is_directory(path, ec)) {
    for (auto& [name, t] : read_folder(path))
      into.by_name[name] = GivenInput{path, false, std::move(t), {}};
    return;
  }
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto add_tensors = [&](const TensorMap& tensors) {
    for (const auto& [name, t] : tensors) into.by_name[name] = GivenInput{path, false, t, {}};
  };
  if (ext == ".safetensors") {
    add_tensors(read_safetensors(path));
  } else if (ext == ".npz") {
    add_tensors(read_npz(path));
  } else if (ext == ".json") {
    for (auto& [name, values] : read_json_inputs(path))
      into.by_name[name] = GivenInput{path, false, std::nullopt, values};
  } else if (ext == ".npy") {
    throw CliError(fmt::format("{} is a .npy file, which holds one array; --inputs takes a file "
                               "of named tensors",
                               path),
                   "give it as --input NAME=@" + path +
                       ", or save the arrays with np.savez(\"in.npz\", NAME=array, ...)");
  } else {
    throw CliError(fmt::format("inputs file '{}' is not one rlx reads: its extension is not "
                               ".safetensors, .npz or .json",
                               path),
                   "save the inputs as safetensors, as numpy's .npz (np.savez) or as JSON "
                   "({\"NAME\": [[1, 2], [3, 4]]})");
  }
}

// NAME=REST of --input and --input-shape.
std::pair<std::string, std::string> split_spec(const std::string& spec, const char* option,
                                               const char* hint) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw CliError(fmt::format("{} '{}' is not NAME=...", option, spec), hint);
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

void read_command_line(const InputOptions& o, GivenInputs& into) {
  std::map<std::string, std::string> shapes;
  for (const std::string& spec : o.shapes) {
    auto [name, shape] = split_spec(spec, "--input-shape",
                                    "give the shape as NAME=2x8 (nothing after = for a scalar)");
    if (!shapes.emplace(name, shape).second)
      throw CliError(fmt::format("--input-shape gives the shape of '{}' twice", name),
                     "give each input's shape once");
  }
  std::map<std::string, GivenInput> given;
  for (const std::string& spec : o.values) {
    auto [name, text] = split_spec(spec, "--input", kInputHint);
    const std::string source = "--input " + name;
    GivenInput in{source, true, std::nullopt, {}};
    auto shape = shapes.find(name);
    if (text.starts_with('@')) {
      if (shape != shapes.end())
        throw CliError(fmt::format("--input-shape {0}: {0} is read from {1}, which has its own "
                                   "shape",
                                   name, text.substr(1)),
                       "leave out --input-shape for an input read from a .npy file");
      in.tensor = read_npy(text.substr(1));
      in.source = text.substr(1);
    } else {
      in.values.where = source;
      in.values.literals = split_values(text, source);
      if (shape != shapes.end())
        in.values.shape = parse_shape(shape->second, "--input-shape " + name);
    }
    if (!given.emplace(name, std::move(in)).second)
      throw CliError(fmt::format("--input gives '{}' twice", name), "give each input once");
  }
  for (const auto& [name, shape] : shapes)
    if (!given.count(name))
      throw CliError(fmt::format("--input-shape {}={}: there is no --input {}", name, shape, name),
                     "give the values too: --input " + name + "=1,2,3");
  for (auto& [name, in] : given) {
    if (auto file = into.by_name.find(name); file != into.by_name.end())
      print_note(fmt::format("{} replaces the tensor '{}' of {}", "--input " + name, name,
                             file->second.source));
    into.by_name[name] = std::move(in);
  }
}

// "f32[2,3]" of a given tensor, "[2,3]" (or "i64[2,3]") of given numbers.
std::string given_type(const GivenInput& in) {
  if (in.tensor) return std::string(dtype_name(in.tensor->dtype())) + in.tensor->shape_str();
  const WrittenValues& v = in.values;
  const std::string shape = v.shape ? fmt::format("[{}]", fmt::join(*v.shape, ","))
                                    : fmt::format("[{}]", v.literals.size());
  return (v.dtype ? std::string(dtype_name(*v.dtype)) : "") + shape;
}

// Numbers written without a shape make one axis; for an input of another rank that is not what
// the user meant, and the runtime's shape error would not say which option to add.
void check_rank(const std::string& name, const WrittenValues& v, const TensorType& type) {
  const int64_t n = static_cast<int64_t>(v.literals.size());
  if (v.shape || type.rank() == 1 || (type.rank() == 0 && n == 1)) return;
  std::string dims;
  for (const Dim& d : type.shape) dims += (dims.empty() ? "" : "x") + d.str();
  throw CliError(fmt::format("{} gives {} {} as one axis, but the model's input '{}' is {}",
                             v.where, n, n == 1 ? "value" : "values", name, type.str()),
                 type.rank() == 0 ? "give one value: the input is a scalar"
                                  : fmt::format("give its shape: --input-shape {}={}", name, dims));
}

}  // namespace

void add_input_options(CLI::App& app, InputOptions& into) {
  add_value(app, "-i,--inputs", "IN", into.file,
            "the input tensors by graph input name: a .safetensors, .npz or .json file, or a "
            "folder of ONNX test data (input_0.pb, ...)");
  add_repeatable(app, "--input", "NAME=VALUES", into.values,
                 "one input: a comma list of numbers in the input's dtype, or @FILE.npy; "
                 "overrides the --inputs file's tensor of that name");
  add_repeatable(app, "--input-shape", "NAME=2x8", into.shapes,
                 "the shape of --input NAME's numbers (default: one axis, or a scalar for a "
                 "single value and an input of rank 0)");
}

GivenInputs read_inputs(const InputOptions& options, const FolderReader& read_folder) {
  GivenInputs inputs;
  if (options.file) read_file(*options.file, read_folder, inputs);
  read_command_line(options, inputs);
  if (options.file) inputs.sources = *options.file;
  if (!options.values.empty())
    inputs.sources += inputs.sources.empty() ? "--input" : " and --input";
  return inputs;
}

namespace {

// The tensor offered to the importer for freezing, before the model says the input's dtype:
// numbers written without one are whole shape values (i64) when they all are, else f32. A guess
// the model contradicts for an input it freezes is the importer's dtype error, never a silent
// conversion; nullopt when the numbers make neither.
std::optional<Tensor> offered_value(const GivenInput& in) {
  if (in.tensor) return in.tensor;
  for (DType dtype : in.values.dtype ? std::vector<DType>{*in.values.dtype}
                                     : std::vector<DType>{DType::kI64, DType::kF32}) {
    try {
      return make_tensor(in.values, dtype, /*input_rank=*/1);
    } catch (const CliError&) {
      // Not numbers of this dtype: the next guess, or no offer (match_inputs reports them once
      // the model gives their dtype).
    }
  }
  return std::nullopt;
}

}  // namespace

ImportOptions import_options_for(const GivenInputs& inputs) {
  ImportOptions options;
  for (const auto& [name, in] : inputs.by_name) {
    options.input_shapes.emplace(
        name, in.tensor ? in.tensor->shape() : shape_of(in.values, /*input_rank=*/1));
    if (std::optional<Tensor> value = offered_value(in))
      options.input_values.emplace(name, std::move(*value));
  }
  return options;
}

std::vector<std::string> take_frozen_inputs(const Model& model, GivenInputs& inputs) {
  auto listed = model.metadata.find(kFrozenInputsKey);
  if (listed == model.metadata.end()) return {};
  std::vector<std::string> frozen = split_frozen_inputs(listed->second);
  for (const std::string& name : frozen) {
    auto it = inputs.by_name.find(name);
    print_note(fmt::format(
        "froze input '{}' to its value from {}: the model needs it to decide shapes, so it is "
        "a constant of the compiled model, not an input",
        name, it == inputs.by_name.end() ? inputs.sources : it->second.source));
    if (it != inputs.by_name.end()) inputs.by_name.erase(it);
  }
  return frozen;
}

NamedTensors match_inputs(const Graph& graph, const GivenInputs& given) {
  std::vector<std::string> expected, names, missing, extra;
  for (ValueId v : graph.inputs) {
    names.push_back(graph.values[v].name);
    expected.push_back(graph.values[v].name + " " + graph.values[v].type.str());
  }
  // A name typed on the command line that the model lacks is a slip to fix before anything runs.
  for (const auto& [name, in] : given.by_name)
    if (in.on_command_line && std::find(names.begin(), names.end(), name) == names.end()) {
      const std::optional<std::string> close = closest_name(name, names);
      throw CliError(
          fmt::format("--input {}: the model has no input '{}'\n  the model's inputs: {}", name,
                      name, listed(expected)),
          close ? fmt::format("did you mean --input {}=...?", *close)
                : "name one of the model's inputs (`rlx info MODEL` lists them)");
    }

  NamedTensors inputs;
  for (ValueId v : graph.inputs) {
    const Value& value = graph.values[v];
    auto it = given.by_name.find(value.name);
    if (it == given.by_name.end()) {
      missing.push_back(value.name);
      continue;
    }
    const GivenInput& in = it->second;
    Tensor t;
    if (in.tensor) {
      t = *in.tensor;
    } else {
      check_rank(value.name, in.values, value.type);
      t = make_tensor(in.values, in.values.dtype.value_or(value.type.dtype), value.type.rank());
    }
    if (t.dtype() == DType::kI32 && value.type.dtype == DType::kI64) {
      t = widen_i32(t);
      print_note(fmt::format("input '{}' is i32 in {}; widened to the i64 the model takes",
                             value.name, in.source));
    }
    inputs.emplace(value.name, t);
  }
  for (const auto& [name, in] : given.by_name)
    if (!inputs.count(name)) extra.push_back(name);
  if (!missing.empty()) {
    std::string what, held, likely;
    for (ValueId v : graph.inputs)
      for (const std::string& m : missing)
        if (graph.values[v].name == m)
          what += fmt::format("{}'{}' ({})", what.empty() ? "" : ", ", m, graph.type(v).str());
    for (const auto& [name, in] : given.by_name)
      held += fmt::format("{}{} {}", held.empty() ? "" : ", ", name, given_type(in));
    for (const std::string& e : extra)
      if (std::optional<std::string> close = closest_name(e, missing))
        likely += fmt::format("; is '{}' meant to be '{}'?", e, *close);
    const bool one = missing.size() == 1;
    std::string message =
        given.sources.empty()
            ? fmt::format("{} {} {} not given\n  the model's inputs: {}", one ? "input" : "inputs",
                          what, one ? "is" : "are", listed(expected))
            : fmt::format(
                  "{} {} {} not in {}\n  the model's inputs: {}\n  missing: {}\n"
                  "  {} holds: {}",
                  one ? "input" : "inputs", what, one ? "is" : "are", given.sources,
                  listed(expected), listed(missing), given.sources,
                  held.empty() ? "no tensors" : held);
    throw CliError(std::move(message),
                   "give each missing input in an --inputs file or as --input NAME=VALUES "
                   "(`rlx info MODEL` lists the inputs)" +
                       likely);
  }
  if (!extra.empty())
    print_warning(fmt::format(
        "{} holds {} {}, which the model does not take; {} unused (the "
        "model's inputs: {})",
        given.by_name.at(extra.front()).source, extra.size() == 1 ? "tensor" : "tensors",
        quoted_list(extra), extra.size() == 1 ? "it is" : "they are", listed(names)));
  return inputs;
}

}  // namespace rlx::cli
