// Backward ops of the norms, softmax and attention (ops_hir_nn.cpp), which the gradient rules of
// LayerNorm, RMSNorm, Softmax and Attention emit (core/src/autodiff/vjp_nn.cpp), so that a target
// can run each one as a single fused pass per row instead of the dozen reductions and elementwise
// kernels its differentiated decomposition takes:
//   LayerNormBackward(x, [scale,] dy) {epsilon = 1e-5} -> dx, dscale [D], dbias [D]
//   RMSNormBackward(x, [scale,] dy) {epsilon = 1e-6}   -> dx, dscale [D]
//   SoftmaxBackward(y, dy) {axis = -1}                 -> dx            (y: Softmax's result)
//   AttentionBackward(q, k, v, [mask,] dout) {mask, scale} -> dq, dk, dv (Attention's attrs)
// Normalisation is over the last dim D, as in the forward ops. dscale and dbias are the
// cotangents of a scale and bias broadcast to x's shape, summed over every leading dim; they are
// [D] whatever the forward's scale or bias was ([D], [1] or absent: the rule sums a [1] one and
// drops an absent one). The bias is not an input because nothing here reads it, and dbias is
// always a result because an op's result count is fixed. Each op's decomposition is its
// definition: targets without a native kernel run it through the shared IR.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

#include <cmath>
#include <limits>

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


// AttentionBackward's inputs are Attention's (ops_hir_nn.cpp) with dout appended, k and v
// already in q's dtype (the rule converts them, as the forward reads them). Returns scale.
Types infer_attention_backward(const Types& in, const Node& n) {
  const char* op = "AttentionBackward";
  const TensorType &q = in[0], &k = in[1], &v = in[2], &dout = in.back();
  if (!is_float(q.dtype)) fail("{} needs a floating-point q, got {}", op, q.str());
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    fail("{}: k and v must be of q's dtype {} (the gradient rule converts them), got {} and {}",
         op, dtype_name(q.dtype), k.str(), v.str());
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    fail("{} needs rank-4 q, k, v [batch, heads, seq, dim], got {}, {}, {}", op, q.str(),
         k.str(), v.str());
  const std::string mask = n.attr_string("mask", "none");
  if (mask != "none" && mask != "causal" && mask != "padding")
    fail("{}: mask must be \"none\", \"causal\" or \"padding\", got \"{}\"", op, mask);
  if ((mask == "padding") != (in.size() == 5))
    fail("{}: mask \"{}\" {} a mask input before dout", op, mask,
         mask == "padding" ? "needs" : "takes no");
  const Dim &h = q.shape[1], &hkv = k.shape[1];
  if (!h.is_static() || !hkv.is_static() || !q.shape[3].is_static())
    fail("{}: head counts and head dim must be static, got q {} and k {}", op, q.str(), k.str());
  if (hkv.value <= 0 || h.value % hkv.value)
    fail("{}: {} query heads is not a multiple of {} kv heads", op, h.value, hkv.value);
  if (!(k.shape[0] == q.shape[0]) || !(k.shape[3] == q.shape[3]) || !(v.shape[0] == q.shape[0]) ||
      !(v.shape[1] == hkv) || !(v.shape[2] == k.shape[2]))
    fail("{}: q {}, k {}, v {} do not fit one attention ([B,H,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv])",
         op, q.str(), k.str(), v.str());
  if (in.size() == 5 && in[3].rank() != 2)
    fail("{}: padding mask must be [batch, kv_seq], got {}", op, in[3].str());
  const TensorType want = tt(q.dtype, {q.shape[0], q.shape[1], q.shape[2], v.shape[3]});
  if (!(dout == want))
    fail("{}: dout must be {} (Attention's result), got {}", op, want.str(), dout.str());
  return {q, k, v};
}

// [B,Hkv,S,D] -> [B,H,S,D], each kv head repeated over its group of query heads.
ValueId expand_heads(GraphBuilder& b, ValueId kv, const Dim& h) {
  Shape s = b.type(kv).shape;
  if (s[1] == h) return kv;
  Shape wide{s[0], s[1], h.value / s[1].value, s[2], s[3]};
  return b.reshape(b.broadcast_in_dim(kv, wide, {0, 1, 3, 4}), Shape{s[0], h, s[2], s[3]});
}

// The transpose of expand_heads: [B,H,S,D] summed over each group -> [B,Hkv,S,D].
ValueId sum_groups(GraphBuilder& b, ValueId x, const Dim& hkv) {
  Shape s = b.type(x).shape;
  if (s[1] == hkv) return x;
  return b.reduce(b.reshape(x, Shape{s[0], hkv, s[1].value / hkv.value, s[2], s[3]}), {2},
                  ReduceKind::kSum);
}

// Recomputes P as the forward decomposition does (masked scores set to the dtype's lowest
// value, so a row with no visible key is uniform), then
//   dV = P^T dO, dP = dO V^T, dS = keep * P * (dP - rowsum(dP * P)),
//   dQ = scale dS K, dK = scale dS^T Q,
// dK and dV summed over each kv head's group. keep zeroes dS where the forward selected the
// constant: no gradient reaches q or k through a masked score.
Ins attention_backward(GraphBuilder& b, const Node& n, const Ins& in) {
  const ValueId q = in[0], dout = in.back();
  const TensorType tq = b.type(q);
  const Dim h = tq.shape[1], hkv = b.type(in[1]).shape[1];
  const ValueId k = expand_heads(b, in[1], h), v = expand_heads(b, in[2], h);
  const std::string mask = n.attr_string("mask", "none");
  const double scale =
      n.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(tq.shape[3].value)));
  ValueId s = b.dot_general(q, k, {0, 1}, {0, 1}, {3}, {3});  // [B,H,Sq,Sk]
  s = b.mul(s, b.full_like(s, scale));
  const Shape ss = b.type(s).shape;
  const DType d = tq.dtype;
  const double lowest = d == DType::kF16    ? -65504.0
                        : d == DType::kBF16 ? -3.3895313892515355e38
                        : d == DType::kF32
                            ? static_cast<double>(std::numeric_limits<float>::lowest())
                            : std::numeric_limits<double>::lowest();
  std::optional<ValueId> keep;
  if (mask == "causal") {
    Shape qk{ss[2], ss[3]};
    ValueId row = b.op("iota", {}, {{"shape", qk}, {"dim", int64_t{0}}, {"dtype", DType::kI64}});
    ValueId col = b.op("iota", {}, {{"shape", qk}, {"dim", int64_t{1}}, {"dtype", DType::kI64}});
    ValueId sq = b.op("dim_size", {s}, {{"dim", int64_t{2}}});
    ValueId sk = b.op("dim_size", {s}, {{"dim", int64_t{3}}});
    ValueId off = b.broadcast_in_dim(b.sub(sk, sq), qk, {});
    keep = b.broadcast_in_dim(b.binary("le", col, b.add(row, off)), ss, {2, 3});
  } else if (mask == "padding") {
    ValueId m = in[3];
    ValueId kept = b.type(m).dtype == DType::kBool ? m : b.binary("ne", m, b.full_like(m, 0.0));
    keep = b.broadcast_in_dim(kept, ss, {0, 3});
  }
  if (keep) s = b.select(*keep, s, b.full_like(s, lowest));
  const ValueId e = b.unary("exp", b.sub(s, b.reduce_keep(s, {3}, ReduceKind::kMax)));
  const ValueId p = b.div(e, b.reduce_keep(e, {3}, ReduceKind::kSum));
  const ValueId dv = b.dot_general(p, dout, {0, 1}, {0, 1}, {2}, {2});   // [B,H,Sk,Dv]
  const ValueId dp = b.dot_general(dout, v, {0, 1}, {0, 1}, {3}, {3});   // [B,H,Sq,Sk]
  ValueId ds = b.mul(p, b.sub(dp, b.reduce_keep(b.mul(dp, p), {3}, ReduceKind::kSum)));
  if (keep) ds = b.select(*keep, ds, b.full_like(ds, 0.0));
  ds = b.mul(ds, b.full_like(ds, scale));
  const ValueId dq = b.dot_general(ds, k, {0, 1}, {0, 1}, {3}, {2});  // [B,H,Sq,D]
  const ValueId dk = b.dot_general(ds, q, {0, 1}, {0, 1}, {2}, {2});  // [B,H,Sk,D]
  return {dq, sum_groups(b, dk, hkv), sum_groups(b, dv, hkv)};
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

  OpDef at{"AttentionBackward", OpLevel::kHir, OpClass::kOpaque, 4, 5, 3};
  at.infer = infer_attention_backward;
  at.decompose = attention_backward;
  at.sample = [](DType d) -> std::optional<OpSample> {
    if (!is_float(d)) return std::nullopt;
    return sample_of({tt(d, {1, 2, 3, 4}), tt(d, {1, 1, 3, 4}), tt(d, {1, 1, 3, 4}),
                      tt(d, {1, 2, 3, 4})},
                     {{"mask", std::string("causal")}});
  };
  at.summary =
      "Attention's gradients: (q, k, v, [mask,] dout) -> dq, dk, dv {mask, scale}, dk and dv "
      "summed over each kv group";

  for (OpDef* d : {&ln, &rms, &sm, &at}) f.add(std::move(*d));
}

}  // namespace rlx
