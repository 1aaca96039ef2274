#include "rlx/core/op_registry.h"

#include <fmt/format.h>

#include "autodiff/vjp_util.h"
#include "ops/op_family.h"
#include "rlx/core/error.h"

namespace rlx {

namespace {

// Every op family, in registration order (primitives first: HIR decompositions refer to them).
constexpr void (*kFamilies[])(OpFamily&) = {
    mir_ops,    hir_ops,    hir_nn_ops,     hir_nn_backward_ops, loss_ops,   pool_ops,
    quant_ops,  fake_quant_ops, splat_ops,  linalg_ops,          sparse_ops, krylov_ops,
    collective_ops, complex_ops};

}  // namespace

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry;
  return registry;
}

OpRegistry::OpRegistry() {
  for (auto family : kFamilies) {
    OpFamily f;
    family(f);
    for (OpDef& d : f.defs()) add(std::move(d));
  }
  // The primitives' reverse-mode rules live with autodiff (core/src/autodiff).
  for (auto& [op, rule] : autodiff::mir_gradient_rules()) {
    auto it = index_.find(op);
    RLX_CHECK(it != index_.end(), "gradient rule for an unknown op: " + op);
    ops_[it->second].gradient = std::move(rule);
  }
}

void OpRegistry::add(OpDef def) {
  RLX_CHECK(!index_.count(def.name), "op defined twice: " + def.name);
  index_[def.name] = ops_.size();
  ops_.push_back(std::move(def));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &ops_[it->second];
}

const OpDef& OpRegistry::get(const std::string& name) const {
  if (const OpDef* d = find(name)) return *d;
  throw_user_error(fmt::format("unknown op '{}'", name));
}

std::vector<TensorType> infer_node(const Graph& g, int32_t node) {
  const Node& n = g.nodes.at(node);
  const OpDef* def = OpRegistry::instance().find(n.op);
  if (!def) throw_user_error(fmt::format("node {}: unknown op '{}'", g.describe_node(node), n.op));
  int nin = static_cast<int>(n.inputs.size());
  if (nin < def->min_inputs || (def->max_inputs >= 0 && nin > def->max_inputs)) {
    std::string want = def->max_inputs < 0 ? fmt::format("at least {}", def->min_inputs)
                       : def->min_inputs == def->max_inputs
                           ? fmt::format("{}", def->min_inputs)
                           : fmt::format("{} to {}", def->min_inputs, def->max_inputs);
    throw_user_error(
        fmt::format("node {}: {} takes {} inputs, got {}", g.describe_node(node), n.op, want, nin));
  }
  std::vector<TensorType> in;
  for (ValueId v : n.inputs) in.push_back(g.type(v));
  try {
    return def->infer(in, n);
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("node {}: {}", g.describe_node(node), e.what()), e.where());
  }
}

void verify_graph(const Graph& g) {
  std::vector<bool> defined(g.values.size(), false);
  for (ValueId v : g.inputs) defined.at(v) = true;
  for (ValueId v : g.params) defined.at(v) = true;
  for (int32_t i = 0; i < static_cast<int32_t>(g.nodes.size()); ++i) {
    const Node& n = g.nodes[i];
    for (ValueId v : n.inputs) {
      if (v < 0 || v >= static_cast<ValueId>(g.values.size()) || !defined[v])
        throw_user_error(fmt::format("node {}: input %{} is used before it is defined",
                                     g.describe_node(i), v >= 0 && v < (ValueId)g.values.size()
                                                             ? g.values[v].name
                                                             : std::to_string(v)));
    }
    auto inferred = infer_node(g, i);
    if (inferred.size() != n.outputs.size())
      throw_user_error(fmt::format("node {}: {} produces {} results, {} declared", g.describe_node(i),
                                   n.op, inferred.size(), n.outputs.size()));
    for (size_t k = 0; k < inferred.size(); ++k) {
      const TensorType& declared = g.type(n.outputs[k]);
      if (!(declared == inferred[k]))
        throw_user_error(fmt::format("node {}: result {} is declared {} but {} gives {}",
                                     g.describe_node(i), k, declared.str(), n.op,
                                     inferred[k].str()));
      defined[n.outputs[k]] = true;
    }
    for (auto& region : n.regions) verify_graph(*region);
  }
  for (ValueId v : g.outputs)
    if (v < 0 || !defined.at(v)) throw_user_error("graph output is never defined");
}

}  // namespace rlx
