// `rlx run MODEL --target T --inputs IN.safetensors --output OUT.safetensors`: tensors go in and
// come out by the graph's input and output names, so the files are self-describing and any tool
// that writes safetensors can drive a model.
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "json_out.h"
#include "model.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

std::string names_of(const TensorMap& tensors) {
  std::string out;
  for (const auto& [name, t] : tensors) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "no tensors" : out;
}

// Checks names here, where the file can be named in the message; dtype and shape checks stay
// with the runtime, which knows the symbolic dims.
NamedTensors match_inputs(const Graph& graph, const TensorMap& file, const std::string& path) {
  NamedTensors inputs;
  std::string expected;
  for (ValueId v : graph.inputs) {
    const Value& value = graph.values[v];
    expected += (expected.empty() ? "" : ", ") + value.name + " " + value.type.str();
    auto it = file.find(value.name);
    if (it == file.end())
      throw CliError(fmt::format("input '{}' ({}) is not in {} (it holds: {})", value.name,
                                 value.type.str(), path, names_of(file)),
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

int run_main(const Args& args, const GlobalOptions& global) {
  const fs::path model_path = args.positional(0);
  const std::string target_name = args.required("target");
  const std::string inputs_path = args.required("inputs");
  const fs::path output_path = args.required("output");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, target_name);
  require_can_execute(*target, target_name, model_path.string());
  Model model_file = load_model(reg, model_path);
  const Graph& graph = chosen_graph(model_file, args);
  std::error_code ec;
  if (!fs::exists(inputs_path, ec))
    throw CliError(fmt::format("inputs file '{}' does not exist", inputs_path),
                   "give a safetensors file holding one tensor per graph input");
  NamedTensors inputs = match_inputs(graph, read_safetensors(inputs_path), inputs_path);

  Session session(target);
  CompiledModel model = session.compile(graph);
  NamedTensors outputs = model.run(inputs);

  if (output_path.has_parent_path() && !fs::is_directory(output_path.parent_path(), ec))
    throw CliError(fmt::format("cannot write {}: folder {} does not exist", output_path.string(),
                               output_path.parent_path().string()),
                   "create the folder first, or choose another --output");
  write_safetensors(output_path, outputs);

  json::Array summary;
  std::string text;
  for (ValueId v : graph.outputs) {
    const std::string& name = graph.values[v].name;
    auto it = outputs.find(name);
    if (it == outputs.end()) continue;
    const Tensor& t = it->second;
    json::Array shape;
    for (int64_t d : t.shape()) shape.push_back(jint(d));
    summary.push_back(json::Value{json::Object{{"name", jstring(name)},
                                               {"dtype", jstring(dtype_name(t.dtype()))},
                                               {"shape", json::Value{std::move(shape)}}}});
    text += fmt::format("  {} {}{}\n", name, dtype_name(t.dtype()), t.shape_str());
  }
  if (args.flag("json"))
    std::fputs(
        (to_json_text(json::Value{json::Object{{"outputs", json::Value{summary}}}}) + "\n").c_str(),
        stdout);
  else
    std::fputs(fmt::format("wrote {}:\n{}", output_path.string(), text).c_str(), stdout);
  return 0;
}

}  // namespace

Command run_command() {
  CommandSpec spec;
  spec.name = "run";
  spec.summary = "run a model on named inputs from a safetensors file";
  spec.usage = "MODEL --target T --inputs IN.safetensors --output OUT.safetensors [--json]";
  spec.description =
      "Compiles MODEL for target T and runs it. IN.safetensors holds one tensor per graph input,\n"
      "named like the input; OUT.safetensors receives one tensor per graph output, named like\n"
      "the output. Symbolic dims are bound from the input shapes.";
  spec.positionals = {"MODEL"};
  spec.options = {
      {"target", 't', "T", "the target to run on (see `rlx --list-targets`)"},
      {"inputs", 'i', "IN.safetensors", "the input tensors, by graph input name"},
      {"output", 'o', "OUT.safetensors", "where to write the output tensors"},
      {"json", 0, "", "print a JSON summary: {\"outputs\": [{\"name\", \"dtype\", \"shape\"}]}"},
      graph_option(),
  };
  return {spec, &run_main};
}

}  // namespace rlx::cli
