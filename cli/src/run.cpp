// `rlx run MODEL --target T --inputs IN.safetensors --output OUT.safetensors`: tensors go in and
// come out by the graph's input and output names, so the files are self-describing and any tool
// that writes safetensors can drive a model.
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "errors.h"
#include "inputs_file.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model, target, inputs, output, graph;
  bool json = false, q8_activations = false;
};

void declare_run_options(CLI::App& app, RunOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_value(app, "-i,--inputs", "IN.safetensors", o.inputs,
            "the input tensors, by graph input name", Presence::kRequired);
  add_value(app, "-o,--output", "OUT.safetensors", o.output, "where to write the output tensors",
            Presence::kRequired);
  add_flag(app, "--json", o.json,
           "print a JSON summary: {\"outputs\": [{\"name\", \"dtype\", \"shape\"}]}");
  add_graph_option(app, o.graph);
  add_q8_activations_flag(app, o.q8_activations);
}

int run_main(const RunOptions& o, const GlobalOptions& global) {
  const fs::path model_path = o.model;
  const std::string& target_name = o.target;
  const std::string& inputs_path = o.inputs;
  const fs::path output_path = o.output;
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, target_name);
  require_can_execute(*target, target_name, model_path.string());
  const TensorMap file = read_inputs_file(inputs_path);
  Model model_file = load_model(reg, model_path, import_options_for(file));
  if (o.q8_activations) use_q8_activations(model_file, model_path.string());
  const Graph& graph = model_file.graph(o.graph);
  NamedTensors inputs = match_inputs(graph, file, inputs_path);

  Session session(target);
  CompiledModel model = session.compile(model_file, o.graph);
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
  if (o.json)
    std::fputs(
        (to_json_text(json::Value{json::Object{{"outputs", json::Value{summary}}}}) + "\n").c_str(),
        stdout);
  else
    std::fputs(fmt::format("wrote {}:\n{}", output_path.string(), text).c_str(), stdout);
  return 0;
}

}  // namespace

Command run_command() {
  return make_command<RunOptions>(
      {"run", "run a model on named inputs from a safetensors file",
       "MODEL --target T --inputs IN.safetensors --output OUT.safetensors [--json]",
       "Compiles MODEL for target T and runs it. IN.safetensors holds one tensor per graph input,\n"
       "named like the input; OUT.safetensors receives one tensor per graph output, named like\n"
       "the output. Symbolic dims are bound from the input shapes (an ONNX or rten model whose\n"
       "shape arithmetic rlx cannot keep symbolic is specialised on them at import)."},
      &declare_run_options, &run_main);
}

}  // namespace rlx::cli
