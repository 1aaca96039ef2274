// Why: a trained weight changes every step, so the cpu GEMM cannot pack it once ahead of time
// as it does for inference, and packing a transposed operand (Linear's W as [out, in]) costs
// about three times the product itself at the MLP's shapes (784x128, measured on the 2-core dev
// machine: 1.9 ms against 0.65 ms for the same product over W^T stored contiguously). Better
// still is not to transpose at all: a weight that is only ever read as W^T is kept as W^T
// between steps (its optimizer state too), so the forward reads it in place and its gradient
// comes out in the same layout (x^T g), and the Trainer transposes only where the user sees it
// (initial values, parameters(), save, load). Where a product still reads a weight transposed
// (the backward's g W for a weight kept as W^T, or a weight with other uses), a transpose
// materialised once per step (a loop kernel streaming W) is far cheaper than packing it.
#include "train/weight_layout.h"

#include <algorithm>

#include "rlx/core/builder.h"

namespace rlx::train {

namespace {

bool reads_weight_transposed(const Graph& g, const Node& n, ValueId w) {
  if (n.op != "dot_general" || n.inputs.size() != 2 || n.inputs[1] != w || n.inputs[0] == w)
    return false;
  return g.type(w).rank() == 2 && n.attr_ints("rhs_batch").empty() &&
         n.attr_ints("rhs_contract") == IntList{1};
}

bool is_weight(const std::vector<ValueId>& weights, ValueId v) {
  return std::find(weights.begin(), weights.end(), v) != weights.end();
}

// Rebuilds `g`: the weights in `stored` become inputs of the transposed type read in place by
// the products that read them as W^T; other weights read as W^T get one transpose each.
Graph rebuild(const Graph& g, const std::vector<ValueId>& weights,
              const std::vector<ValueId>& stored) {
  Graph out;
  out.name = g.name;
  for (const Value& v : g.values) out.reserve_name(v.name);
  std::vector<ValueId> map(g.values.size(), kNoValue);
  for (ValueId v : g.inputs) {
    TensorType t = g.type(v);
    if (is_weight(stored, v)) std::swap(t.shape[0], t.shape[1]);
    map[v] = out.add_input(g.values[v].name, t);
  }
  for (ValueId v : g.params) map[v] = out.add_param(g.values[v].name, g.type(v));
  out.weights = g.weights;
  GraphBuilder b(out);
  std::vector<ValueId> transposed(g.values.size(), kNoValue);  // one transpose per weight
  for (const Node& n : g.nodes) {
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(map[v]);
    const ValueId w = n.inputs.size() == 2 ? n.inputs[1] : kNoValue;
    if (w != kNoValue && is_weight(weights, w) && reads_weight_transposed(g, n, w)) {
      ValueId rhs = map[w];
      if (!is_weight(stored, w)) {
        if (transposed[w] == kNoValue) transposed[w] = b.transpose(map[w], {1, 0});
        rhs = transposed[w];
      }
      b.set_loc(n.loc);
      ValueId y = b.dot_general(ins[0], rhs, n.attr_ints("lhs_batch"), {},
                                n.attr_ints("lhs_contract"), {0});
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

}  // namespace

Graph transpose_weights_for_products(const Graph& g, const std::vector<ValueId>& weights) {
  return rebuild(g, weights, {});
}

WeightLayout store_weights_transposed(const Graph& g, const std::vector<ValueId>& weights) {
  std::vector<ValueId> stored;
  for (ValueId w : weights) {
    if (g.type(w).rank() != 2 || !is_static(g.type(w).shape)) continue;
    if (std::find(g.outputs.begin(), g.outputs.end(), w) != g.outputs.end()) continue;
    bool used = false, only_transposed = true;
    for (const Node& n : g.nodes) {
      if (std::find(n.inputs.begin(), n.inputs.end(), w) == n.inputs.end()) continue;
      used = true;
      only_transposed = only_transposed && reads_weight_transposed(g, n, w);
    }
    if (used && only_transposed) stored.push_back(w);
  }
  WeightLayout layout{rebuild(g, weights, stored), {}};
  for (ValueId w : stored) layout.transposed.push_back(g.values[w].name);
  return layout;
}

}  // namespace rlx::train
