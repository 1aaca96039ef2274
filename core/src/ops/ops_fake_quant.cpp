// FakeQuantize, the op of quantization-aware training: a value rounded to the integer grid it
// will have after quantization and brought back to float, so the loss sees the error int8
// introduces while everything stays differentiable.
//   FakeQuantize(x, scale, zero_point) {qmin = -128, qmax = 127, axis = 0,
//                                       gradient = "clipped" | "identity"} -> y (x's type)
//     q = clamp(round(x / scale) + zero_point, qmin, qmax)   (round: half to even, as the
//     y = (q - zero_point) * scale                            quantizers of rlx/core/quantize.h)
//   scale and zero_point have x's float dtype: scalars (per tensor) or vectors along `axis` (per
//   channel); zero_point holds integers.
// Its gradient is the straight-through estimator: the rounding's zero derivative replaced by
// one, where q was not clamped ("clipped", as PyTorch's FakeQuantize) or everywhere
// ("identity"); scale and zero_point get none (they are fixed, not learned). So that rule, not
// the decomposition's, is what autodiff differentiates: a HIR op with a gradient rule stays whole
// through decompose_to_mir (autodiff/gradients.cpp), and targets run the decomposition.
#include "autodiff/vjp_util.h"
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

using Ins = std::vector<ValueId>;

int64_t channel_axis(const Node& n, int64_t rank) {
  int64_t axis = n.attr_int("axis", 0);
  return axis < 0 ? axis + rank : axis;
}

std::vector<TensorType> infer_fake_quantize(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &x = in[0], &scale = in[1], &zero = in[2];
  if (!is_float(x.dtype)) fail("FakeQuantize: x must be a float tensor, got {}", x.str());
  if (scale.dtype != x.dtype || zero.dtype != x.dtype)
    fail("FakeQuantize: scale ({}) and zero_point ({}) must have x's dtype {}", scale.str(),
         zero.str(), dtype_name(x.dtype));
  if (!(scale.shape == zero.shape))
    fail("FakeQuantize: scale ({}) and zero_point ({}) must have one shape", scale.str(),
         zero.str());
  if (scale.rank() > 1)
    fail("FakeQuantize: scale must be a scalar (per tensor) or a vector (per channel), got {}",
         scale.str());
  if (scale.rank() == 1) {
    const int64_t axis = channel_axis(n, x.rank());
    if (axis < 0 || axis >= x.rank())
      fail("FakeQuantize: axis {} is outside x's {} dims", n.attr_int("axis", 0), x.rank());
    if (!(scale.shape[0] == x.shape[axis]))
      fail("FakeQuantize: a per-channel scale along axis {} needs {} entries, got {}", axis,
           x.shape[axis].str(), scale.str());
  }
  const int64_t qmin = n.attr_int("qmin", -128), qmax = n.attr_int("qmax", 127);
  if (qmin >= qmax) fail("FakeQuantize: qmin ({}) must be below qmax ({})", qmin, qmax);
  const std::string grad = n.attr_string("gradient", "clipped");
  if (grad != "clipped" && grad != "identity")
    fail("FakeQuantize: gradient must be \"clipped\" or \"identity\", got \"{}\"", grad);
  return one(x);
}

// scale or zero_point broadcast to x's shape.
ValueId spread(GraphBuilder& b, const Node& n, ValueId v, ValueId x) {
  const Shape& shape = b.type(x).shape;
  if (b.type(v).rank() == 0) return b.broadcast_in_dim(v, shape, {});
  return b.broadcast_in_dim(v, shape, {channel_axis(n, static_cast<int64_t>(shape.size()))});
}

// round(x / scale) + zero_point, before the clamp.
ValueId grid(GraphBuilder& b, const Node& n, const Ins& in) {
  return b.add(b.unary("round", b.div(in[0], spread(b, n, in[1], in[0]))),
               spread(b, n, in[2], in[0]));
}

Ins fake_quantize_mir(GraphBuilder& b, const Node& n, const Ins& in) {
  const ValueId q = grid(b, n, in);
  const ValueId lo = b.full_like(q, static_cast<double>(n.attr_int("qmin", -128)));
  const ValueId hi = b.full_like(q, static_cast<double>(n.attr_int("qmax", 127)));
  const ValueId clamped = b.binary("max", b.binary("min", q, hi), lo);
  return {b.mul(b.sub(clamped, spread(b, n, in[2], in[0])), spread(b, n, in[1], in[0]))};
}

Ins fake_quantize_gradient(GraphBuilder& b, const Node& n, const Ins& in, const Ins& ct) {
  if (n.attr_string("gradient", "clipped") == "identity") return {ct[0], kNoValue, kNoValue};
  const ValueId q = grid(b, n, in);
  const ValueId inside = b.binary(
      "and", b.binary("ge", q, b.full_like(q, static_cast<double>(n.attr_int("qmin", -128)))),
      b.binary("le", q, b.full_like(q, static_cast<double>(n.attr_int("qmax", 127)))));
  return {b.select(inside, ct[0], b.full_like(ct[0], 0.0)), kNoValue, kNoValue};
}

}  // namespace

void fake_quant_ops(OpFamily& f) {
  OpDef d{"FakeQuantize", OpLevel::kHir, OpClass::kOpaque, 3, 3, 1};
  d.infer = infer_fake_quantize;
  d.decompose = fake_quantize_mir;
  d.gradient = fake_quantize_gradient;
  d.sample = [](DType t) -> std::optional<OpSample> {
    if (!is_float(t)) return std::nullopt;
    return sample_of({tt(t, {2, 3}), tt(t, {}), tt(t, {})});
  };
  d.summary =
      "x rounded to an integer grid and back {qmin, qmax, axis, gradient}: quantization-aware "
      "training, with a straight-through gradient";
  f.add(std::move(d));
}

}  // namespace rlx
