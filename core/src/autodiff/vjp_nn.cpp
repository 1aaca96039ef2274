// Vector-Jacobian rules of LayerNorm, RMSNorm, Softmax, Attention and SoftmaxCrossEntropy. Each
// emits its backward op (core/src/ops/ops_hir_nn_backward.cpp, ops_hir_loss.cpp) instead of
// differentiating the forward decomposition node by node, so autodiff keeps the forward op whole
// (autodiff/gradients.cpp) and the target that runs the step lowers both: natively where it has
// kernels (cpu: one pass per row), through the backward op's MIR decomposition elsewhere.
#include "autodiff/vjp_util.h"

namespace rlx::autodiff {

namespace {

using Ins = std::vector<ValueId>;

// The backward op's [D] cotangent in the shape of the forward's scale or bias: a [1] one was
// broadcast over the whole dim, so its cotangent is the sum.
ValueId as_param(GraphBuilder& b, ValueId grad, ValueId param) {
  const TensorType want = b.type(param);
  if (b.type(grad) == want) return grad;
  return b.reshape(b.reduce(grad, {0}, ReduceKind::kSum), want.shape);
}

// x [, scale [, bias]] -> the backward op's (x, [scale,] dy); its results dx, dscale[, dbias]
// map back onto the forward's inputs.
Ins norm_rule(GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct, const char* op,
              double eps) {
  Ins args = {in[0]};
  if (in.size() > 1) args.push_back(in[1]);
  args.push_back(ct[0]);
  const Ins g = b.op_n(op, args, {{"epsilon", n.attr_float("epsilon", eps)}});
  Ins out = {g[0]};
  for (size_t k = 1; k < in.size(); ++k) out.push_back(as_param(b, g[k], in[k]));
  return out;
}

// Attention reads k and v converted to q's dtype (a KV cache kept in f16 read by f32 queries), so
// the backward op takes them converted and its dk, dv go back to k's and v's dtypes. The mask is
// not differentiable: it gets no cotangent. The rule covers every form the forward accepts.
Ins attention_rule(GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
  const DType d = b.type(in[0]).dtype;
  auto as = [&](ValueId x, DType to) { return b.type(x).dtype == to ? x : b.convert(x, to); };
  Ins args = {in[0], as(in[1], d), as(in[2], d)};
  if (in.size() == 4) args.push_back(in[3]);
  args.push_back(ct[0]);
  Attrs attrs{{"mask", n.attr_string("mask", "none")}};
  if (n.has_attr("scale")) attrs["scale"] = n.attr_float("scale", 1.0);
  const Ins g = b.op_n("AttentionBackward", args, attrs);
  Ins out = {g[0], as(g[1], b.type(in[1]).dtype), as(g[2], b.type(in[2]).dtype)};
  if (in.size() == 4) out.push_back(kNoValue);
  return out;
}

}  // namespace

void nn_rules(Rules& r) {
  r["LayerNorm"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
    return norm_rule(b, n, in, ct, "LayerNormBackward", 1e-5);
  };
  r["RMSNorm"] = [](GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
    return norm_rule(b, n, in, ct, "RMSNormBackward", 1e-6);
  };
  // From the forward's result y: dx = y * (dy - sum(dy * y)) needs nothing else.
  r["Softmax"] = [](GraphBuilder& b, const Node& n, const Ins&, const Ins& ct) {
    return Ins{b.op("SoftmaxBackward", {n.outputs[0], ct[0]}, {{"axis", n.attr_int("axis", -1)}})};
  };
  r["Attention"] = attention_rule;
  // The gradient wrt the logits only: the labels are integers and carry no cotangent.
  r["SoftmaxCrossEntropy"] = [](GraphBuilder& b, const Node&, const Ins& in, const Ins& ct) {
    return Ins{b.op("SoftmaxCrossEntropyBackward", {in[0], in[1], ct[0]}), kNoValue};
  };
}

}  // namespace rlx::autodiff
