#include "passes/passes_util.h"

namespace rlx::passes {

void replace_uses(Graph& g, ValueId from, ValueId to) {
  for (Node& n : g.nodes)
    for (ValueId& v : n.inputs)
      if (v == from) v = to;
  for (ValueId& v : g.outputs)
    if (v == from) v = to;
}

void compact(Graph& g, const std::vector<bool>& keep) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) {
      for (ValueId v : g.nodes[i].outputs) g.values[v].producer = -1;
      continue;
    }
    auto idx = static_cast<int32_t>(kept.size());
    for (ValueId v : g.nodes[i].outputs) g.values[v].producer = idx;
    kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
}

std::vector<int> use_counts(const Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (ValueId v : n.inputs) ++uses[v];
  for (ValueId v : g.outputs) ++uses[v];
  return uses;
}

}  // namespace rlx::passes
