#include "passes/product_layouts.h"

#include <algorithm>

#include "rlx/core/op_registry.h"

namespace rlx {

void keep_product_layouts(const Graph& g, const std::vector<int>& uses, std::vector<bool>& mat) {
  std::vector<std::vector<int32_t>> readers(g.values.size());
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i)
    for (ValueId v : g.nodes[i].inputs) readers[v].push_back(i);
  auto sole_reader = [&](ValueId v) -> const Node* {
    return readers[v].size() == 1 ? &g.nodes[readers[v][0]] : nullptr;
  };
  for (const Node& n : g.nodes) {
    const OpDef* d = OpRegistry::instance().find(n.op);
    if (!d || d->cls != OpClass::kElementwise || n.outputs.size() != 1) continue;
    const ValueId v = n.outputs[0];
    if (mat[v] || uses[v] != 1) continue;
    const bool after_product = std::any_of(n.inputs.begin(), n.inputs.end(), [&](ValueId in) {
      const int32_t p = g.values[in].producer;
      return p >= 0 && g.nodes[p].op == "dot_general" && mat[in];
    });
    if (!after_product) continue;
    const Node* r = sole_reader(v);
    while (r && r->op == "reshape" && uses[r->outputs[0]] == 1) r = sole_reader(r->outputs[0]);
    if (r && r->op == "transpose") mat[v] = true;
  }
}

}  // namespace rlx
