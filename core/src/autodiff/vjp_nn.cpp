// Vector-Jacobian rules of LayerNorm, RMSNorm and Softmax. Each emits its backward HIR op
// (core/src/ops/ops_hir_nn_backward.cpp) instead of differentiating the forward decomposition
// node by node, so autodiff keeps the forward op whole (autodiff/gradients.cpp) and the target
// that runs the step lowers both: natively where it has kernels (cpu: one pass per row), through
// the backward op's MIR decomposition elsewhere.
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
}

}  // namespace rlx::autodiff
