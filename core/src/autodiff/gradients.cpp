// The reverse-mode pass: cotangents flow from the loss back through every node that lies
// between the requested values and the loss, each node's op contributing its VJP rule.
#include <fmt/format.h>

#include "autodiff/vjp_util.h"
#include "rlx/core/autodiff.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/error.h"

namespace rlx {

namespace autodiff {

namespace {

// Comparisons, logical and integer-valued ops: their results carry no cotangent, so the pass
// never asks; the entries say so explicitly (every primitive but while has a rule).
GradientFn no_flow_rule() {
  return [](GraphBuilder&, const Node&, const std::vector<ValueId>& in, const std::vector<ValueId>&) {
    return std::vector<ValueId>(in.size(), kNoValue);
  };
}

}  // namespace

Rules mir_gradient_rules() {
  Rules r;
  elementwise_rules(r);
  structural_rules(r);
  linalg_rules(r);
  nn_rules(r);
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "not", "iota",
                         "constant", "dim_size"})
    r[op] = no_flow_rule();
  // c64 viewed as f32 pairs and back (how Real, Imag, Complex and Conj reach the parts): the
  // cotangent takes the opposite view. i64 and u64 words carry no cotangent.
  r["bitcast"] = [](GraphBuilder& b, const Node&, const std::vector<ValueId>& in,
                    const std::vector<ValueId>& ct) {
    return std::vector<ValueId>{b.op("bitcast", {ct[0]}, {{"dtype", b.type(in[0]).dtype}})};
  };
  return r;
}

}  // namespace autodiff

namespace {

// A target that claims no HIR op and accepts every primitive: dispatch against it is exactly
// "every HIR op through its decomposition (or a rewrite)".
class PrimitivesOnly final : public Target {
 public:
  std::string name() const override { return "mir"; }
  // HIR ops with a gradient rule of their own (Gaussian splatting, the dense solvers,
  // FakeQuantize, whose decomposition's rounding would give zero, and the norms and softmax,
  // whose rules emit fused backward ops) stay as they are: autodiff
  // differentiates them through that rule, and the target that runs the program lowers them
  // natively, through their decomposition, or refuses them by name.
  Verdict claim_native(const NodeSignature& s) const override {
    const OpDef* def = OpRegistry::instance().find(s.op);
    if (def && def->level == OpLevel::kHir && def->gradient)
      return Verdict{true, "kept: differentiated by its own gradient rule"};
    return Verdict::no("autodiff differentiates HIR ops through their decompositions");
  }
  Verdict accepts_primitive(const NodeSignature&) const override { return Verdict::yes(); }
  Verdict can_execute() const override { return Verdict::no("a decomposition target only"); }
  std::unique_ptr<Executable> compile(const lir::Program&) override { return nullptr; }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override { return {}; }
};

bool carries_cotangent(const TensorType& t) { return is_float(t.dtype) || is_complex(t.dtype); }

}  // namespace

Graph decompose_to_mir(const Graph& g) {
  PrimitivesOnly t;
  return dispatch(g, t).graph;
}

std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt) {
  const TensorType loss_type = g.type(loss);
  if (loss_type.rank() != 0 || !is_float(loss_type.dtype))
    throw_user_error(fmt::format(
        "autodiff: the loss %{} is {}; it must be a floating-point scalar (reduce it to one first)",
        g.values[loss].name, loss_type.str()));
  GraphBuilder b(g);
  b.set_loc("backward");
  ValueId one = b.scalar(loss_type.dtype, 1.0);
  return append_vjp(g, {loss}, {one}, wrt);
}

std::vector<ValueId> append_vjp(Graph& g, const std::vector<ValueId>& outputs,
                                const std::vector<ValueId>& cotangents,
                                const std::vector<ValueId>& wrt) {
  RLX_CHECK(outputs.size() == cotangents.size(), "append_vjp: one cotangent per output");
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!(g.type(cotangents[i]) == g.type(outputs[i])))
      throw_user_error(fmt::format("autodiff: the cotangent of %{} is {}; it must be {}",
                                   g.values[outputs[i]].name, g.type(cotangents[i]).str(),
                                   g.type(outputs[i]).str()));
  const auto forward_nodes = static_cast<int32_t>(g.nodes.size());
  // Values that depend on a requested one: cotangents flow only into those (and only nodes the
  // loss depends on ever receive one).
  std::vector<bool> depends(g.values.size(), false);
  for (ValueId v : wrt) depends.at(v) = true;
  for (int32_t i = 0; i < forward_nodes; ++i)
    for (ValueId in : g.nodes[i].inputs)
      if (depends[in])
        for (ValueId out : g.nodes[i].outputs) depends[out] = true;

  GraphBuilder b(g);
  b.set_loc("backward");
  std::vector<ValueId> ct(g.values.size(), kNoValue);
  // The same value twice among the outputs (or an output that is itself in `wrt`) adds up.
  for (size_t i = 0; i < outputs.size(); ++i)
    ct[outputs[i]] = ct[outputs[i]] == kNoValue ? cotangents[i] : b.add(ct[outputs[i]], cotangents[i]);
  for (int32_t i = forward_nodes - 1; i >= 0; --i) {
    const Node node = g.nodes[i];  // a copy: building appends nodes
    bool has_ct = false;
    for (ValueId out : node.outputs) has_ct = has_ct || ct[out] != kNoValue;
    bool wanted = false;
    for (ValueId in : node.inputs) wanted = wanted || (depends[in] && carries_cotangent(g.type(in)));
    if (!has_ct || !wanted) continue;
    const OpDef& def = OpRegistry::instance().get(node.op);
    if (!def.gradient)
      throw_user_error(fmt::format(
          "autodiff: node {} has no gradient rule for op '{}'{}; the loss depends on a parameter "
          "through it",
          g.describe_node(i), node.op,
          def.level == OpLevel::kHir ? " (a HIR op: run decompose_to_mir first)" : ""));
    std::vector<ValueId> out_ct;
    for (ValueId out : node.outputs)
      out_ct.push_back(ct[out] != kNoValue ? ct[out] : b.full_like(out, 0.0));
    std::vector<ValueId> in_ct = def.gradient(b, node, node.inputs, out_ct);
    RLX_CHECK(in_ct.size() == node.inputs.size(), "gradient rule of " + node.op + " returned a wrong count");
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      ValueId in = node.inputs[k];
      if (in_ct[k] == kNoValue || !depends[in] || !carries_cotangent(g.type(in))) continue;
      RLX_CHECK(g.type(in_ct[k]) == g.type(in), fmt::format("gradient rule of {} gives {} for an input of {}",
                                                          node.op, g.type(in_ct[k]).str(), g.type(in).str()));
      ct[in] = ct[in] == kNoValue ? in_ct[k] : b.add(ct[in], in_ct[k]);
    }
  }
  std::vector<ValueId> grads;
  for (ValueId v : wrt) grads.push_back(ct[v] != kNoValue ? ct[v] : b.full_like(v, 0.0));
  return grads;
}

}  // namespace rlx
