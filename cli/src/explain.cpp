// `rlx explain MODEL --target T`: the graph's inputs and outputs, each node's result type, the
// dispatch path (native, shared IR, rewritten) chosen for it, and why the earlier paths were
// refused. An illegal node makes compile() throw the CompileError that names it, so explain
// fails exactly where `rlx compile` would.
#include <cstdio>

#include "bindings.h"
#include "commands.h"
#include "model.h"
#include "options.h"
#include "rlx/core/host_collectives.h"
#include "rlx/core/runtime.h"

namespace rlx::cli {
namespace {

struct ExplainOptions {
  std::string model, target, graph;
  std::vector<std::string> bind;
  bool json = false;
  bool allow_host_collectives = false;
  PrecisionOptions precision;
};

void declare_explain_options(CLI::App& app, ExplainOptions& o) {
  add_model_argument(app, o.model);
  add_target_option(app, o.target, "compile for");
  add_bind_option(app, o.bind, "a size for a symbolic dim, fixed at import");
  add_flag(app, "--json", o.json, "print the dispatch report as JSON");
  add_graph_option(app, o.graph);
  add_precision_option(app, o.precision);
  add_flag(app, "--allow-host-collectives", o.allow_host_collectives,
           "let a target without a collective engine stage collectives through the host (the "
           "rewrite host-staged-collective), as run, generate and bench do with this flag");
}

int explain_main(const ExplainOptions& o, const GlobalOptions& global) {
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  std::shared_ptr<Target> target = choose_target(reg, o.target);
  const std::string target_name = target->name();  // --target auto names one
  if (o.allow_host_collectives)
    if (const HostCollectivesV1* staging = host_collectives(*target))
      staging->allow(staging->context);
  Model model_file = load_model(reg, o.model, import_options_for(parse_bind_specs(o.bind, 0)));
  std::map<std::string, PrecisionReport> precision = use_precision(model_file, o.precision, o.model);
  const Graph& graph = model_file.graph(o.graph);
  Session session(target);
  CompiledModel model = session.compile(graph);
  DispatchReport report = model.report();
  if (auto it = precision.find(o.graph); it != precision.end()) report.precision = it->second;
  std::string out = o.json ? report.to_json() : report.to_text(global.verbose);
  if (out.empty() || out.back() != '\n') out += '\n';
  // How the target executes here (cpu: kernels compiled or interpreted), when it says.
  if (!o.json)
    if (Verdict v = target->can_execute(); !v.reason.empty())
      out += target_name + ": " + v.reason + "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

Command explain_command() {
  return make_command<ExplainOptions>(
      {"explain", "show the dispatch path chosen for every node of a model",
       "MODEL --target T [--bind NAME=SIZE]... [--precision MODE] [--json]",
       "Compiles MODEL (rlx IR text, or a file or folder an importer reads) for target T and\n"
       "prints the graph's inputs and outputs, then for every node its result type (dtype and\n"
       "shape, symbolic dims kept) and the path that lowers it (native, shared-ir or rewritten);\n"
       "rewritten nodes (and, with -v, every node) list why the earlier paths refused.\n"
       "Exits 1 with the node, op, dtypes and refusals when no path is legal. Dims stay symbolic\n"
       "unless sized with --bind (an ONNX or rten model may need that to import).\n"
       "--precision MODE first lists what the precision policy changed: each op now computing\n"
       "in f16 or bf16, each weight stored narrow and each convert inserted at a boundary."},
      &declare_explain_options, &explain_main);
}

}  // namespace rlx::cli
