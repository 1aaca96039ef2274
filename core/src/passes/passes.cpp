// Canonicalisation, CSE and DCE. Constant folding lives in passes_fold.cpp.
#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

#include "passes/passes_util.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {

using passes::replace_uses;

namespace {

bool is_identity_perm(const IntList& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The operand a node is equivalent to, or kNoValue.
ValueId identity_of(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.outputs.size() != 1) return kNoValue;
  const TensorType& in = g.type(n.inputs[0]);
  const TensorType& out = g.type(n.outputs[0]);
  if (!(in == out)) return kNoValue;
  if (n.op == "reshape" || n.op == "convert") return n.inputs[0];
  if (n.op == "transpose" && is_identity_perm(n.attr_ints("perm"))) return n.inputs[0];
  if (n.op == "broadcast_in_dim" && is_identity_perm(n.attr_ints("dims"))) return n.inputs[0];
  if (n.op == "slice") return n.inputs[0];  // same type means the whole operand
  if (n.op == "concat" && n.inputs.size() == 1) return n.inputs[0];
  return kNoValue;
}

// Whether every value of float type `from` is exactly a value of `to` (so converting there and
// back is the identity).
bool float_widens_exactly(DType from, DType to) {
  if (from == to) return true;
  if (from == DType::kF16 || from == DType::kBF16) return to == DType::kF32 || to == DType::kF64;
  return from == DType::kF32 && to == DType::kF64;
}

// bitcast(bitcast(x)) back to x's type; convert(convert(x)) back to x's float type through a
// wider one (a 16-bit KV cache widened by its graph and narrowed again by --precision amp-f16 for
// attention: without this, a copy of the whole cache per layer and step); and a slice that takes
// exactly one operand of a concat: what remains between two nodes whose complex values were
// split into parts (split-complex) once one's recombined result is taken apart again by the next.
ValueId forwarded_operand(const Graph& g, const Node& n) {
  if (n.inputs.empty() || g.values[n.inputs[0]].producer < 0) return kNoValue;
  const Node& p = g.nodes[g.values[n.inputs[0]].producer];
  if (n.op == "bitcast" && p.op == "bitcast" && g.type(p.inputs[0]) == g.type(n.outputs[0]))
    return p.inputs[0];
  if (n.op == "convert" && p.op == "convert" && g.type(p.inputs[0]) == g.type(n.outputs[0]) &&
      is_float(g.type(p.inputs[0]).dtype) &&
      float_widens_exactly(g.type(p.inputs[0]).dtype, g.type(p.outputs[0]).dtype))
    return p.inputs[0];
  if (n.op != "slice" || p.op != "concat") return kNoValue;
  const TensorType& in = g.type(n.inputs[0]);
  const int64_t axis = p.attr_int("axis") < 0 ? p.attr_int("axis") + in.rank() : p.attr_int("axis");
  const IntList &start = n.attr_ints("start"), &limit = n.attr_ints("limit");
  if (n.has_attr("strides"))
    for (int64_t st : n.attr_ints("strides"))
      if (st != 1) return kNoValue;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (d == axis) continue;
    const bool whole = start[d] == 0 && (limit[d] == -1 || (in.shape[d].is_static() && limit[d] == in.shape[d].value));
    if (!whole) return kNoValue;
  }
  int64_t at = 0;
  for (ValueId operand : p.inputs) {
    const int64_t len = g.type(operand).shape[axis].value;
    if (start[axis] == at && limit[axis] == at + len) return operand;
    at += len;
  }
  return kNoValue;
}

}  // namespace

bool canonicalize(Graph& g) {
  bool changed = false;
  for (Node& n : g.nodes) {
    ValueId id = identity_of(g, n);
    if (id == kNoValue) id = forwarded_operand(g, n);
    if (id != kNoValue) {
      replace_uses(g, n.outputs[0], id);
      changed = true;
      continue;
    }
    // reshape(reshape(x)) -> reshape(x); transpose(transpose(x)) -> one transpose.
    if ((n.op == "reshape" || n.op == "transpose") && g.values[n.inputs[0]].producer >= 0) {
      const Node& p = g.nodes[g.values[n.inputs[0]].producer];
      if (p.op == n.op) {
        if (n.op == "transpose") {
          const IntList &inner = p.attr_ints("perm"), &outer = n.attr_ints("perm");
          IntList fused;
          for (int64_t k : outer) fused.push_back(inner[k]);
          n.attrs["perm"] = fused;
        }
        n.inputs[0] = p.inputs[0];
        changed = true;
      }
    }
  }
  return changed;
}

namespace {

// Attributes are part of a node's identity; large constants are compared by content only when
// small, to keep CSE linear.
bool cse_key(const Node& n, std::string* key) {
  if (!n.regions.empty()) return false;
  // Two Recv nodes alike are two messages, two AllReduces two calls every rank makes.
  if (const OpDef* def = OpRegistry::instance().find(n.op); def && def->communicates) return false;
  *key = n.op + "(";
  for (ValueId v : n.inputs) *key += std::to_string(v) + ",";
  *key += ")";
  for (auto& [k, v] : n.attrs) {
    if (auto* t = std::get_if<Tensor>(&v); t && t->numel() > 64) return false;
    *key += k + "=" + attr_str(v) + ";";
  }
  return true;
}

}  // namespace

bool eliminate_common_subexpressions(Graph& g) {
  std::unordered_map<std::string, int32_t> seen;
  bool changed = false;
  std::vector<bool> keep(g.nodes.size(), true);
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    std::string key;
    if (!cse_key(g.nodes[i], &key)) continue;
    auto [it, fresh] = seen.emplace(key, i);
    if (fresh) continue;
    const Node& first = g.nodes[it->second];
    for (size_t k = 0; k < first.outputs.size(); ++k) replace_uses(g, g.nodes[i].outputs[k], first.outputs[k]);
    keep[i] = false;
    changed = true;
  }
  if (changed) passes::compact(g, keep);
  return changed;
}

bool eliminate_dead_code(Graph& g) {
  std::vector<bool> live_value(g.values.size(), false), keep(g.nodes.size(), false);
  for (ValueId v : g.outputs) live_value[v] = true;
  for (int32_t i = static_cast<int32_t>(g.nodes.size()) - 1; i >= 0; --i) {
    const Node& n = g.nodes[i];
    for (ValueId v : n.outputs) keep[i] = keep[i] || live_value[v];
    if (keep[i])
      for (ValueId v : n.inputs) live_value[v] = true;
  }
  bool changed = std::find(keep.begin(), keep.end(), false) != keep.end();
  if (changed) passes::compact(g, keep);
  return changed;
}

void run_default_passes(Graph& g) {
  for (int round = 0; round < 16; ++round) {
    bool changed = canonicalize(g);
    changed |= fold_constants(g);
    changed |= eliminate_common_subexpressions(g);
    changed |= eliminate_dead_code(g);
    if (!changed) return;
  }
}

Graph specialize(const Graph& src, const Bindings& bindings) {
  Graph g = src;
  for (Value& v : g.values) v.type.shape = bind_shape(v.type.shape, bindings);
  for (Node& n : g.nodes)
    for (auto& [k, a] : n.attrs)
      if (auto* s = std::get_if<Shape>(&a)) *s = bind_shape(*s, bindings);
  for (Node& n : g.nodes)
    for (auto& r : n.regions) r = std::make_shared<Graph>(specialize(*r, bindings));
  return g;
}

}  // namespace rlx
