// `rlx explain MODEL --target T`: the dispatch path (native, shared IR, rewritten) chosen for
// every node, and why the earlier paths were refused. An illegal node makes compile() throw the
// CompileError that names it, so explain fails exactly where `rlx compile` would.
#include <cstdio>

#include "commands.h"
#include "bindings.h"
#include "model.h"
#include "rlx/core/runtime.h"

namespace rlx::cli {
namespace {

int explain_main(const Args& args, const GlobalOptions& global) {
  const std::string model_path = args.positional(0);
  const std::string target_name = args.required("target");
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, target_name);
  Model model_file =
      load_model(reg, model_path, import_options_for(parse_bind_specs(args.values("bind"), 0)));
  const Graph& graph = chosen_graph(model_file, args);
  Session session(target);
  CompiledModel model = session.compile(graph);
  std::string out = args.flag("json") ? model.report().to_json() : model.report().to_text(global.verbose);
  if (out.empty() || out.back() != '\n') out += '\n';
  // How the target executes here (cpu: kernels compiled or interpreted), when it says.
  if (!args.flag("json"))
    if (Verdict v = target->can_execute(); !v.reason.empty()) out += target_name + ": " + v.reason + "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

Command explain_command() {
  CommandSpec spec;
  spec.name = "explain";
  spec.summary = "show the dispatch path chosen for every node of a model";
  spec.usage = "MODEL --target T [--bind NAME=SIZE]... [--json]";
  spec.description =
      "Compiles MODEL (rlx IR text, or a file or folder an importer reads) for target T and\n"
      "prints, for every node, the path that lowers it (native, shared-ir or rewritten);\n"
      "rewritten nodes (and, with -v, every node) list why the earlier paths refused.\n"
      "Exits 1 with the node, op, dtypes and refusals when no path is legal. Dims stay symbolic\n"
      "unless sized with --bind (an ONNX or rten model may need that to import).";
  spec.positionals = {"MODEL"};
  spec.options = {
      {"target", 't', "T", "the target to compile for (see `rlx --list-targets`)"},
      bind_option("a size for a symbolic dim, fixed at import"),
      {"json", 0, "", "print the dispatch report as JSON"},
      graph_option(),
  };
  return {spec, &explain_main};
}

}  // namespace rlx::cli
