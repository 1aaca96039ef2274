// `rlx run MODEL --target T --inputs IN.safetensors --output OUT.safetensors`: tensors go in and
// come out by the graph's input and output names, so the files are self-describing and any tool
// that writes safetensors can drive a model.
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "json_out.h"
#include "inputs_file.h"
#include "model.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

int run_main(const Args& args, const GlobalOptions& global) {
  const fs::path model_path = args.positional(0);
  const std::string target_name = args.required("target");
  const std::string inputs_path = args.required("inputs");
  const fs::path output_path = args.required("output");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, target_name);
  require_can_execute(*target, target_name, model_path.string());
  const TensorMap file = read_inputs_file(inputs_path);
  Model model_file = load_model(reg, model_path, import_options_for(file));
  const Graph& graph = chosen_graph(model_file, args);
  NamedTensors inputs = match_inputs(graph, file, inputs_path);

  Session session(target);
  CompiledModel model = session.compile(graph);
  NamedTensors outputs = model.run(inputs);

  std::error_code ec;
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
      "the output. Symbolic dims are bound from the input shapes (an ONNX or rten model whose\n"
      "shape arithmetic rlx cannot keep symbolic is specialised on them at import).";
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
