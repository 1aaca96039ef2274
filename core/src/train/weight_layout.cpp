// Why: a trained weight changes every step, so the cpu GEMM cannot pack it once ahead of time
// as it does for inference, and packing a transposed operand (Linear's W as [out, in]) costs
// about three times the product itself at the MLP's shapes (784x128, measured on the 2-core dev
// machine: 1.9 ms against 0.65 ms for the same product over W^T stored contiguously). A
// transpose materialised once per step (a loop kernel streaming W) is far cheaper, and the
// gradient flows back through it as an index map that fuses into the update.
#include "train/weight_layout.h"

#include <algorithm>

#include "rlx/core/builder.h"

namespace rlx::train {

namespace {

bool reads_weight_transposed(const Graph& g, const Node& n, const std::vector<ValueId>& weights) {
  if (n.op != "dot_general" || n.inputs.size() != 2) return false;
  ValueId rhs = n.inputs[1];
  if (std::find(weights.begin(), weights.end(), rhs) == weights.end()) return false;
  return g.type(rhs).rank() == 2 && n.attr_ints("rhs_batch").empty() &&
         n.attr_ints("rhs_contract") == IntList{1};
}

}  // namespace

Graph transpose_weights_for_products(const Graph& g, const std::vector<ValueId>& weights) {
  Graph out;
  out.name = g.name;
  for (const Value& v : g.values) out.reserve_name(v.name);
  std::vector<ValueId> map(g.values.size(), kNoValue);
  for (ValueId v : g.inputs) map[v] = out.add_input(g.values[v].name, g.type(v));
  for (ValueId v : g.params) map[v] = out.add_param(g.values[v].name, g.type(v));
  out.weights = g.weights;
  GraphBuilder b(out);
  std::vector<ValueId> transposed(g.values.size(), kNoValue);  // one transpose per weight
  for (const Node& n : g.nodes) {
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(map[v]);
    if (reads_weight_transposed(g, n, weights)) {
      ValueId w = n.inputs[1];
      if (transposed[w] == kNoValue) transposed[w] = b.transpose(map[w], {1, 0});
      b.set_loc(n.loc);
      ValueId y = b.dot_general(ins[0], transposed[w], n.attr_ints("lhs_batch"), {}, n.attr_ints("lhs_contract"), {0});
      out.values[y].name = g.values[n.outputs[0]].name;
      map[n.outputs[0]] = y;
      continue;
    }
    Node c = n;
    c.inputs = ins;
    c.outputs.clear();
    auto idx = static_cast<int32_t>(out.nodes.size());
    for (ValueId v : n.outputs) {
      c.outputs.push_back(out.add_value(g.values[v].name, g.type(v), idx));
      map[v] = c.outputs.back();
    }
    out.nodes.push_back(std::move(c));
  }
  for (ValueId v : g.outputs) out.outputs.push_back(map[v]);
  return out;
}

}  // namespace rlx::train
