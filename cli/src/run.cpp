// `rlx run MODEL --target T --inputs IN --output OUT.safetensors`: tensors go in and come out by
// the graph's input and output names, so the files are self-describing and any tool that writes
// safetensors, .npz or JSON can drive a model. Without --output the outputs are printed.
#include <fmt/format.h>

#include <cstdio>

#include "commands.h"
#include "errors.h"
#include "folder_model.h"
#include "inputs_file.h"
#include "json_out.h"
#include "model.h"
#include "options.h"
#include "batch_across_ranks.h"
#include "ranks.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "tensor_view.h"

namespace rlx::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model, graph;
  std::optional<std::string> target;
  InputOptions inputs;
  std::optional<std::string> output;
  bool json = false, q8_activations = false;
  PrecisionOptions precision;
  RankOptions ranks;
  std::optional<int64_t> micro_batches;
};

void declare_run_options(CLI::App& app, RunOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "run on");
  add_input_options(app, o.inputs);
  add_value(app, "-o,--output", "OUT.safetensors", o.output,
            "write the output tensors there (without it they are printed)");
  add_flag(app, "--json", o.json,
           "print {\"outputs\": [{\"name\", \"dtype\", \"shape\", \"values\" or \"summary\"}], "
           "\"frozen_inputs\": [NAME]}");
  add_graph_option(app, o.graph);
  add_q8_activations_flag(app, o.q8_activations);
  add_precision_option(app, o.precision);
  add_rank_options(app, o.ranks);
  add_micro_batches_option(app, o.micro_batches);
}

// Writes or prints `outputs` in the order of `names`; `extra` joins the --json object.
int report_outputs(const std::vector<std::string>& names, const NamedTensors& outputs,
                   const RunOptions& o, const std::optional<fs::path>& output_path,
                   json::Object extra) {
  if (output_path) write_safetensors(*output_path, outputs);
  json::Array summary;
  std::string text;
  for (const std::string& name : names) {
    auto it = outputs.find(name);
    if (it == outputs.end()) continue;
    const Tensor& t = it->second;
    json::Array shape;
    for (int64_t d : t.shape()) shape.push_back(jint(d));
    json::Object entry{{"name", jstring(name)},
                       {"dtype", jstring(dtype_name(t.dtype()))},
                       {"shape", json::Value{std::move(shape)}}};
    for (json::Member& m : tensor_json(t)) entry.push_back(std::move(m));
    summary.push_back(json::Value{std::move(entry)});
    text += output_path ? fmt::format("  {} {}{}\n", name, dtype_name(t.dtype()), t.shape_str())
                        : tensor_text(name, t);
  }
  if (o.json) {
    json::Object doc{{"outputs", json::Value{summary}}};
    for (json::Member& m : extra) doc.push_back(std::move(m));
    std::fputs((to_json_text(json::Value{std::move(doc)}) + "\n").c_str(), stdout);
  } else if (output_path) {
    std::fputs(fmt::format("wrote {}:\n{}", output_path->string(), text).c_str(), stdout);
  } else {
    std::fputs(fmt::format("outputs:\n{}", text).c_str(), stdout);
  }
  return 0;
}

// `rlx run DIR`: a compiled folder, loaded without importing or compiling the model again.
int run_folder(const RunOptions& o, const GlobalOptions& global,
               const std::optional<fs::path>& output_path) {
  refuse_compile_option(o.graph != "main", "--graph", o.model);
  refuse_compile_option(o.q8_activations, "--q8-activations", o.model);
  refuse_compile_option(!o.precision.empty(), "--precision", o.model);
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  const GivenInputs given = read_inputs(
      o.inputs, [&](const fs::path& dir) { return read_input_folder(reg, o.model, dir); });
  registry::CompiledFolder folder = load_compiled_folder(global, o.model, o.target);
  NamedTensors inputs = match_inputs(folder_inputs_graph(folder), given);
  NamedTensors outputs = folder.run(inputs);
  std::vector<std::string> names;
  for (const registry::TensorSpec& out : folder.outputs()) names.push_back(out.name);
  json::Object loaded{{"path", jstring(o.model)},
                      {"target", jstring(folder.target_name())},
                      {"load_ms", jms(folder.load_ms())},
                      {"compile_ms", jms(folder.compile_ms())}};
  return report_outputs(names, outputs, o, output_path,
                        {{"compiled_folder", json::Value{std::move(loaded)}}});
}

int run_main(const RunOptions& o, const GlobalOptions& global) {
  if (std::optional<int> code = launch_ranks(o.ranks)) return *code;
  const fs::path model_path = o.model;
  const std::optional<fs::path> output_path = writable_path(o.output, "--output");
  if (registry::is_compiled_folder(model_path)) return run_folder(o, global, output_path);
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target.value_or("cpu"));
  require_can_execute(*target, target->name(), model_path.string());
  const std::shared_ptr<Channel> channel = join_ranks(*target, o.ranks, &reg);
  GivenInputs given = read_inputs(
      o.inputs, [&](const fs::path& folder) { return read_input_folder(reg, model_path, folder); });
  Model model_file = load_model_shard(reg, model_path, o.ranks, import_options_for(given),
                                      /*copies=*/true);
  const std::vector<std::string> frozen = take_frozen_inputs(model_file, given);
  if (o.q8_activations) use_q8_activations(model_file, model_path.string());
  use_precision(model_file, o.precision, model_path.string());
  const BatchPlan plan =
      plan_batch(model_file, o.graph, o.micro_batches, o.ranks, channel.get());
  const Graph& graph = model_file.graph(o.graph);
  NamedTensors inputs = match_inputs(graph, given);

  Session session(target);
  CompiledModel model = session.compile(model_file, o.graph);
  NamedTensors outputs =
      plan.splits() ? run_batch(model, graph, inputs, plan, *channel) : model.run(inputs);
  std::vector<std::string> names;
  for (ValueId v : graph.outputs) names.push_back(graph.values[v].name);
  json::Array frozen_json;
  for (const std::string& name : frozen) frozen_json.push_back(jstring(name));
  return report_outputs(names, outputs, o, output_path,
                        {{"frozen_inputs", json::Value{std::move(frozen_json)}}});
}

}  // namespace

Command run_command() {
  return make_command<RunOptions>(
      {"run", "run a model on named inputs and print or save its outputs",
       "MODEL|DIR [--target T] [--inputs IN] [--input NAME=VALUES [--input-shape NAME=2x8]]...\n"
       "       [--output OUT.safetensors] [--json]",
       "Compiles MODEL for target T (default cpu) and runs it; DIR, a folder `rlx compile -o DIR`\n"
       "wrote, is loaded instead, with no import or compile, on the target it was compiled for\n"
       "(another --target is refused; -v prints the load time). Inputs are matched to the\n"
       "graph's inputs by name. IN is a .safetensors file, a numpy .npz (np.savez or "
       "np.savez_compressed; one\n"
       "member per input, named like it) or a .json file ({\"NAME\": [[1, 2], [3, 4]]}, or\n"
       "{\"NAME\": {\"dtype\": \"i64\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4]}}; numbers\n"
       "without a dtype take the input's). --input NAME=1,2,3 gives one input on the command\n"
       "line in the input's dtype (shaped by --input-shape NAME=2x8; without it one axis, or a\n"
       "scalar for one value and an input of rank 0), --input NAME=@x.npy from a .npy file; "
       "either\n"
       "replaces the --inputs file's tensor of that name. A value the dtype cannot hold exactly\n"
       "(3.5 for i64, 300 for u8) is an error, never rounded.\n"
       "OUT.safetensors receives one tensor per graph output, named like the output; without\n"
       "--output each output is printed: every value of one with up to 64 elements, else its\n"
       "min, max, mean and first values. Symbolic dims are bound from the input shapes (an ONNX\n"
       "or rten model whose shape arithmetic rlx cannot keep symbolic is specialised on them at\n"
       "import). An ONNX input whose value decides shapes (a Reshape's shape, a Slice's starts,\n"
       "a TopK's k) is frozen to the value given for it, and a note on stderr names it. IN may\n"
       "also be a folder of ONNX test data, input_0.pb, input_1.pb, ... in the graph's input\n"
       "order."},
      &declare_run_options, &run_main);
}

}  // namespace rlx::cli
