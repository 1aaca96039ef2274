// set_kv_cache_dtype: the storage dtype of a decode graph's KV cache (docs/models.md), chosen by
// the user (`--kv-cache f16`) and rewritten into the graph before it is compiled.
#include <fmt/format.h>

#include <map>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/llm/decoding.h"

namespace rlx::llm {

int set_kv_cache_dtype(Graph& g, DType dtype) {
  if (!is_float(dtype))
    throw_user_error(fmt::format("a KV cache is kept in a float dtype (f32, f16, bf16), not {}",
                                 dtype_name(dtype)));
  // Cache values: the past_* inputs and what the scatters that write a step into them return
  // (present_* and the attention's k and v), with their dtype before the rewrite.
  std::map<ValueId, DType> was;
  for (ValueId v : g.inputs)
    if (g.values[v].name.rfind("past_", 0) == 0) {
      if (!is_float(g.type(v).dtype))
        throw_user_error(fmt::format("graph '{}': cache input {} is {}, not a float", g.name,
                                     g.values[v].name, g.type(v).str()));
      was[v] = g.type(v).dtype;
    }
  const auto count = static_cast<int>(was.size());
  if (count == 0) return 0;
  for (const auto& [v, old] : was) g.values[v].type.dtype = dtype;

  // Nodes are rebuilt in order, a convert inserted before the node that needs it.
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + 4 * static_cast<size_t>(count));
  auto convert = [&](ValueId x, DType to, const std::string& loc) {
    if (g.type(x).dtype == to) return x;
    ValueId out = g.add_value(g.fresh_name("kv"), TensorType{to, g.type(x).shape});
    Node n;
    n.op = "convert";
    n.inputs = {x};
    n.outputs = {out};
    n.attrs = {{"dtype", to}};
    n.loc = loc;
    nodes.push_back(std::move(n));
    return out;
  };
  for (Node& n : g.nodes) {
    if (n.op == "scatter" && n.inputs.size() == 3 && was.count(n.inputs[0])) {
      // A step's keys or values are rounded to the cache's dtype as they are stored.
      n.inputs[2] = convert(n.inputs[2], dtype, n.loc);
      const ValueId out = n.outputs[0];
      was[out] = g.type(out).dtype;
      g.values[out].type.dtype = dtype;
    } else {
      // Attention reads k and v of another float dtype than q as converted to q's (the HIR
      // op's definition), so a target reads the cache as it is stored; any other reader gets
      // the dtype it read before.
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        auto it = was.find(n.inputs[i]);
        if (it == was.end() || (n.op == "Attention" && (i == 1 || i == 2))) continue;
        n.inputs[i] = convert(n.inputs[i], it->second, n.loc);
      }
    }
    nodes.push_back(std::move(n));
  }
  g.nodes = std::move(nodes);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId v : g.nodes[i].outputs) g.values[v].producer = static_cast<int32_t>(i);
  // Every node's declared types again agree with inference (Attention's result keeps q's dtype).
  verify_graph(g);
  return count;
}

}  // namespace rlx::llm
