// Backward ops of the norms and softmax (ops_hir_nn.cpp), which the gradient rules of LayerNorm,
// RMSNorm and Softmax emit (core/src/autodiff/vjp_nn.cpp), so that a target can run each one as
// a single fused pass per row instead of the dozen reductions and elementwise kernels its
// differentiated decomposition takes:
//   LayerNormBackward(x, [scale,] dy) {epsilon = 1e-5} -> dx, dscale [D], dbias [D]
//   RMSNormBackward(x, [scale,] dy) {epsilon = 1e-6}   -> dx, dscale [D]
//   SoftmaxBackward(y, dy) {axis = -1}                 -> dx            (y: Softmax's result)
// Normalisation is over the last dim D, as in the forward ops. dscale and dbias are the
// cotangents of a scale and bias broadcast to x's shape, summed over every leading dim; they are
// [D] whatever the forward's scale or bias was ([D], [1] or absent: the rule sums a [1] one and
// drops an absent one). The bias is not an input because nothing here reads it, and dbias is
// always a result because an op's result count is fixed. Each op's decomposition is its
// definition: targets without a native kernel run it through the shared IR.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

using Ins = std::vector<ValueId>;
using Types = std::vector<TensorType>;

// x's normalised dim D; x must be a float tensor of rank >= 1 with a static last dim.
int64_t normalised_dim(const TensorType& x, const char* op) {
  if (!is_float(x.dtype)) fail("{} needs a floating-point x, got {}", op, x.str());
  if (x.rank() < 1)
    fail("{} needs an x of rank >= 1 (it normalises the last dim), got {}", op, x.str());
  const Dim& d = x.shape.back();
  if (!d.is_static())
    fail("{}: the normalised (last) dim of x must be static, got {}; bind it first", op, d.str());
  return d.value;
}

void expect_like(const TensorType& t, const TensorType& want, const char* op, const char* what) {
  if (!(t == want)) fail("{}: {} must be {} (x's type), got {}", op, what, want.str(), t.str());
}

void expect_epsilon(const Node& n, const char* op, double fallback) {
  const double eps = n.attr_float("epsilon", fallback);
  if (!(eps >= 0)) fail("{}: epsilon must be a number >= 0, got {}", op, eps);
}

// Shared by both norms: x, an optional scale ([D] or [1]), dy like x.
int64_t check_norm_inputs(const Types& in, const Node& n, const char* op, double eps) {
  const TensorType& x = in[0];
  const int64_t d = normalised_dim(x, op);
  if (in.size() == 3) {
    const TensorType& s = in[1];
    if (s.dtype != x.dtype || s.rank() != 1 || !(s.shape[0] == Dim(d) || s.shape[0] == Dim(1)))
      fail("{}: scale must be {}[{}] (or [1], broadcast), as the forward op's, got {}", op,
           dtype_name(x.dtype), d, s.str());
  }
  expect_like(in.back(), x, op, "dy");
  expect_epsilon(n, op, eps);
  return d;
}

Types infer_layer_norm_backward(const Types& in, const Node& n) {
  const int64_t d = check_norm_inputs(in, n, "LayerNormBackward", 1e-5);
  return {in[0], tt(in[0].dtype, {d}), tt(in[0].dtype, {d})};
}

Types infer_rms_norm_backward(const Types& in, const Node& n) {
  const int64_t d = check_norm_inputs(in, n, "RMSNormBackward", 1e-6);
  return {in[0], tt(in[0].dtype, {d})};
}

Types infer_softmax_backward(const Types& in, const Node& n) {
  const char* op = "SoftmaxBackward";
  const TensorType& y = in[0];
  if (!is_float(y.dtype))
    fail("{} needs a floating-point y (Softmax's result), got {}", op, y.str());
  if (y.rank() < 1) fail("{} needs a y of rank >= 1, got {}", op, y.str());
  expect_like(in[1], y, op, "dy");
  norm_axis(n.attr_int("axis", -1), y.rank(), "SoftmaxBackward: axis");
  return {y};
}

// The mean over the last axis, broadcast back to v's shape (the dim is static: inference
// checked it). The forward decompositions take it the same way.
ValueId mean_last(GraphBuilder& b, ValueId v) {
  const TensorType t = b.type(v);
  return b.div(b.reduce_keep(v, {t.rank() - 1}, ReduceKind::kSum),
               b.full_like(v, static_cast<double>(t.shape.back().value)));
}

// v [..., D] summed over every leading dim: [D].
ValueId sum_leading(GraphBuilder& b, ValueId v) {
  const int64_t r = b.type(v).rank();
  if (r == 1) return v;
  IntList axes;
  for (int64_t a = 0; a + 1 < r; ++a) axes.push_back(a);
  return b.reduce(v, axes, ReduceKind::kSum);
}

// Both norms: y = xhat * scale with xhat = (x - mu) * rstd (mu = 0 for RMSNorm), so
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * scale,
// with the mean(g) term only where mu depends on x (LayerNorm).
Ins norm_backward(GraphBuilder& b, const Node& n, const Ins& in, bool rms) {
  const ValueId x = in[0], dy = in.back();
  const double eps = n.attr_float("epsilon", rms ? 1e-6 : 1e-5);
  const ValueId centered = rms ? x : b.sub(x, mean_last(b, x));
  const ValueId var = mean_last(b, b.mul(centered, centered));
  const ValueId rstd = b.unary("rsqrt", b.add(var, b.full_like(var, eps)));
  const ValueId xhat = b.mul(centered, rstd);
  // The scale broadcast from the last dim, as the forward op reads it ([1] stretches).
  const ValueId g =
      in.size() == 3 ? b.mul(dy, b.broadcast_in_dim(in[1], b.type(x).shape, {b.type(x).rank() - 1}))
                     : dy;
  ValueId inner = b.sub(g, b.mul(xhat, mean_last(b, b.mul(g, xhat))));
  if (!rms) inner = b.sub(inner, mean_last(b, g));
  Ins out = {b.mul(rstd, inner), sum_leading(b, b.mul(dy, xhat))};
  if (!rms) out.push_back(sum_leading(b, dy));
  return out;
}

// dx = y * (dy - sum(dy * y)) along the axis.
Ins softmax_backward(GraphBuilder& b, const Node& n, const Ins& in) {
  const ValueId y = in[0], dy = in[1];
  const int64_t axis = norm_axis(n.attr_int("axis", -1), b.type(y).rank());
  return {b.mul(y, b.sub(dy, b.reduce_keep(b.mul(dy, y), {axis}, ReduceKind::kSum)))};
}

std::optional<OpSample> norm_sample(DType d, double eps) {
  if (!is_float(d)) return std::nullopt;
  return sample_of({tt(d, {2, 3}), tt(d, {3}), tt(d, {2, 3})}, {{"epsilon", eps}});
}

}  // namespace

void hir_nn_backward_ops(OpFamily& f) {
  OpDef ln{"LayerNormBackward", OpLevel::kHir, OpClass::kOpaque, 2, 3, 3};
  ln.infer = infer_layer_norm_backward;
  ln.decompose = [](GraphBuilder& b, const Node& n, const Ins& in) {
    return norm_backward(b, n, in, false);
  };
  ln.sample = [](DType d) { return norm_sample(d, 1e-5); };
  ln.summary = "LayerNorm's gradients: (x, [scale,] dy) -> dx, dscale, dbias {epsilon}";

  OpDef rms{"RMSNormBackward", OpLevel::kHir, OpClass::kOpaque, 2, 3, 2};
  rms.infer = infer_rms_norm_backward;
  rms.decompose = [](GraphBuilder& b, const Node& n, const Ins& in) {
    return norm_backward(b, n, in, true);
  };
  rms.sample = [](DType d) { return norm_sample(d, 1e-6); };
  rms.summary = "RMSNorm's gradients: (x, [scale,] dy) -> dx, dscale {epsilon}";

  OpDef sm{"SoftmaxBackward", OpLevel::kHir, OpClass::kOpaque, 2, 2, 1};
  sm.infer = infer_softmax_backward;
  sm.decompose = softmax_backward;
  sm.sample = [](DType d) -> std::optional<OpSample> {
    if (!is_float(d)) return std::nullopt;
    return sample_of({tt(d, {2, 3}), tt(d, {2, 3})}, {{"axis", int64_t{-1}}});
  };
  sm.summary = "Softmax's gradient from its result: (y, dy) -> y * (dy - sum(dy * y)) {axis}";

  for (OpDef* d : {&ln, &rms, &sm}) f.add(std::move(*d));
}

}  // namespace rlx
