// The dispatch contract (docs/architecture.md section 3): for each HIR node, native -> shared IR ->
// rewritten -> CompileError. The result is a graph of MIR primitives plus natively claimed
// nodes, and a DispatchReport recording each node's path.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/precision.h"
#include "rlx/core/target.h"

namespace rlx {

enum class LoweringPath { kNative, kSharedIr, kRewritten };
std::string_view path_name(LoweringPath p);  // "native", "shared-ir", "rewritten"

// A value of the source graph as the report shows it: the name and its type (symbolic dims kept).
struct NamedType {
  std::string name;
  TensorType type;
};

struct DispatchEntry {
  std::string value;     // first output's name
  std::string op;
  std::string loc;
  std::string dtypes;    // "f32,f32 -> f32"
  LoweringPath path = LoweringPath::kSharedIr;
  std::string detail;    // kRewritten: the rewrite's name; kNative: the claim's note, if any
  std::vector<std::string> refused;  // why earlier paths were not taken ("native: ...")
  int primitives = 0;    // MIR nodes the path produced (0 for native)
  // Not native: how the target runs some of those primitives ("dot_general: bf16 x bf16 on AMX
  // tiles"), as its accepts_primitive said, each once.
  std::vector<std::string> notes;
  std::vector<NamedType> outputs;  // the node's results, typed as the source graph types them
};

struct DispatchReport {
  std::string target;
  // The graph's own inputs and outputs, so a report read alone says what the nodes work on.
  std::vector<NamedType> inputs, outputs;
  std::vector<DispatchEntry> entries;
  // What --precision changed before dispatch (mode empty when the graph is as the model has it).
  PrecisionReport precision;
  // `verbose` lists every refusal; otherwise only those behind a rewritten node.
  std::string to_text(bool verbose = false) const;
  std::string to_json() const;
};

// A rewrite turns a node into another form built from ops that are then dispatched again.
struct Rewrite {
  std::string name;     // "conv-im2col"
  std::string op;       // the op it applies to
  std::string summary;
  // Returns a refusal reason when the rewrite does not apply to this node.
  std::function<Verdict(const Graph&, const Node&)> applies;
  std::function<std::vector<ValueId>(class GraphBuilder&, const Node&,
                                     const std::vector<ValueId>&)> build;
};
const std::vector<Rewrite>& rewrites();

struct DispatchResult {
  Graph graph;  // MIR primitives and native nodes
  DispatchReport report;
};

DispatchResult dispatch(const Graph& hir, const Target& target);

// Legality of one op at one dtype on a target, from the op's sample signature; used by the
// registry's legality table. `detail` holds the reason for an illegal or n/a entry.
struct OpLegality {
  enum Kind { kNative, kSharedIr, kRewritten, kIllegal, kNotApplicable } kind;
  std::string detail;
};
OpLegality op_legality(const std::string& op, DType dtype, const Target& target);

}  // namespace rlx
