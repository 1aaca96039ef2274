// Linear quantization: QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked),
// DynamicQuantizeLinear, QLinearMatMul and QLinearConv, in f32 arithmetic with round half to
// even and saturation, as onnx.reference computes them.
#include <cmath>

#include "carried_types.h"
#include "op_util.h"
#include "proto_io.h"

namespace rlx::onnx {

namespace {

std::pair<double, double> int_range(const NodeCtx& n, DType d) {
  switch (d) {
    case DType::kU8:
      return {0, 255};
    case DType::kI8:
      return {-128, 127};
    case DType::kI16:
      return {-32768, 32767};
    case DType::kI32:
      return {-2147483648.0, 2147483647.0};
    default:
      n.failf("quantized dtype {} is not supported", dtype_name(d));
  }
}

// A scale or zero point broadcast to x's shape: scalar, per-axis vector, or blocked.
ValueId spread(NodeCtx& n, ValueId p, const Shape& xs, int64_t axis, int64_t block) {
  GraphBuilder& b = n.b;
  Shape ps = b.type(p).shape;
  bool single = ps.empty() || (ps.size() == 1 && ps[0] == Dim(1));
  if (single && block == 0) return b.broadcast_in_dim(b.reshape(p, Shape{}), xs, {});
  if (block > 0) {
    // [.., ceil(D / block), ..] -> repeat each entry block times along axis -> slice to D.
    if (!xs[axis].is_static() || !ps[axis].is_static())
      n.fail("blocked quantization needs static dims");
    int64_t blocks = ps[axis].value, D = xs[axis].value;
    Shape wide = ps;
    wide.insert(wide.begin() + axis + 1, Dim(block));
    IntList dims;
    for (int64_t i = 0; i < static_cast<int64_t>(ps.size()); ++i)
      dims.push_back(i <= axis ? i : i + 1);
    ValueId w = b.broadcast_in_dim(p, wide, dims);
    Shape flat = ps;
    flat[axis] = blocks * block;
    w = b.reshape(w, flat);
    if (blocks * block != D) {
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < D; ++i) idx.push_back(i);
      w = take(b, w, axis, idx);
    }
    return w;
  }
  if (ps.size() == 1) return b.broadcast_in_dim(p, xs, {axis});
  return b.broadcast_to(p, xs);
}

ValueId quantize(NodeCtx& n, ValueId x, ValueId scale, std::optional<ValueId> zp, DType out,
                 int64_t axis, int64_t block) {
  GraphBuilder& b = n.b;
  Shape xs = b.type(x).shape;
  ValueId xf = b.convert(x, DType::kF32);
  ValueId s = b.convert(spread(n, scale, xs, axis, block), DType::kF32);
  ValueId q = b.unary("round", b.div(xf, s));
  if (zp) q = b.add(q, b.convert(spread(n, *zp, xs, axis, block), DType::kF32));
  auto [lo, hi] = int_range(n, out);
  q = b.binary("max", q, full_like(b, q, lo));
  q = b.binary("min", q, full_like(b, q, hi));
  return b.convert(q, out);
}

// The quantization axis; only per-axis and blocked parameters use it, so a per-tensor scale on
// a low-rank input ignores an out-of-range default.
int64_t quant_axis(NodeCtx& n) {
  int64_t r = n.rank(0), a = n.attr_i("axis", 1);
  if (a < 0) a += r;
  return a >= 0 && a < r ? a : 0;
}

void quantize_linear(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t axis = quant_axis(n);
  int64_t block = n.attr_i("block_size", 0);
  int out_t = ::onnx::TensorProto::UINT8;
  if (n.has(2)) out_t = n.in(2)->onnx_type ? n.in(2)->onnx_type : onnx_from_dtype(n.dtype(2));
  if (n.has_attr("output_dtype") && n.attr_i("output_dtype", 0))
    out_t = static_cast<int>(n.attr_i("output_dtype", 0));
  std::optional<ValueId> zp = n.has(2) ? std::optional<ValueId>(n.x(2)) : std::nullopt;
  if (auto c = carried_type(out_t)) {
    ValueId y;
    Shape xs = n.shape(0);
    if (c->float_code) {
      // Float8/float4: the zero point is 0; the scaled value is encoded with saturation.
      ValueId xf = b.convert(n.x(0), DType::kF32);
      ValueId s = b.convert(spread(n, n.x(1), xs, axis, block), DType::kF32);
      ValueId q = b.div(xf, s);
      // Adding the (zero) zero point as onnx.reference does also turns -0 into +0.
      if (zp) q = b.add(q, spread(n, decode_small_float(b, *zp, out_t), xs, axis, block));
      y = encode_small_float(b, q, out_t, n.attr_i("saturate", 1) != 0);
    } else {
      ValueId xf = b.convert(n.x(0), DType::kF32);
      ValueId s = b.convert(spread(n, n.x(1), xs, axis, block), DType::kF32);
      ValueId q = b.unary("round", b.div(xf, s));
      if (zp) q = b.add(q, b.convert(spread(n, *zp, xs, axis, block), DType::kF32));
      auto [lo, hi] = small_int_range(*c);
      q = b.binary("min", b.binary("max", q, full_like(b, q, lo)), full_like(b, q, hi));
      y = b.convert(q, c->storage);
    }
    n.out(0, y);
    n.cv.lookup(n.node.output(0))->onnx_type = out_t;
    return;
  }
  auto out = dtype_from_onnx(out_t);
  if (!out) n.failf("output type {} is not supported", describe_onnx_dtype(out_t));
  n.out(0, quantize(n, n.x(0), n.x(1), zp, *out, axis, block));
}

void dequantize_linear(NodeCtx& n) {
  GraphBuilder& b = n.b;
  int64_t axis = quant_axis(n);
  int64_t block = n.attr_i("block_size", 0);
  Shape xs = n.shape(0);
  DType out = n.dtype(1);
  if (n.has_attr("output_dtype") && n.attr_i("output_dtype", 0)) {
    auto d = dtype_from_onnx(static_cast<int>(n.attr_i("output_dtype", 0)));
    if (!d) n.fail("unsupported output_dtype");
    out = *d;
  }
  auto carried = carried_type(n.in(0)->onnx_type);
  auto as_f32 = [&](int i) {
    ValueId v = n.x(i);
    if (carried && carried->float_code) return decode_small_float(b, v, carried->onnx_type);
    return b.convert(v, DType::kF32);
  };
  ValueId x = as_f32(0);
  if (n.has(2)) x = b.sub(x, b.convert(spread(n, as_f32(2), xs, axis, block), DType::kF32));
  ValueId y = b.mul(x, b.convert(spread(n, n.x(1), xs, axis, block), DType::kF32));
  n.out(0, b.convert(y, out));
}

void dynamic_quantize(NodeCtx& n) {
  GraphBuilder& b = n.b;
  ValueId x = b.convert(n.x(0), DType::kF32);
  std::vector<int64_t> all;
  for (int64_t i = 0; i < n.rank(0); ++i) all.push_back(i);
  ValueId zero = b.scalar(DType::kF32, 0);
  ValueId mx = b.binary("max", b.reduce(x, all, ReduceKind::kMax), zero);
  ValueId mn = b.binary("min", b.reduce(x, all, ReduceKind::kMin), zero);
  ValueId scale = b.div(b.sub(mx, mn), b.scalar(DType::kF32, 255));
  ValueId zpf = b.unary("round", b.div(b.unary("neg", mn), scale));
  zpf = b.binary("min", b.binary("max", zpf, zero), b.scalar(DType::kF32, 255));
  ValueId zp = b.convert(zpf, DType::kU8);
  n.out(0, quantize(n, n.x(0), scale, zp, DType::kU8, 0, 0));
  n.out(1, scale);
  n.out(2, zp);
}

// (q - zero) in i32.
ValueId centered(GraphBuilder& b, ValueId q, ValueId zp, const Shape& s,
                 std::optional<int64_t> axis) {
  ValueId z = b.convert(zp, DType::kI32);
  Shape zs = b.type(z).shape;
  if (zs.size() == 1 && axis && !(zs[0] == Dim(1)))
    z = b.broadcast_in_dim(z, s, {*axis});
  else
    z = b.broadcast_in_dim(b.reshape(z, Shape{}), s, {});
  return b.sub(b.convert(q, DType::kI32), z);
}

ValueId requantize(NodeCtx& n, ValueId acc, ValueId multiplier, ValueId yzp) {
  GraphBuilder& b = n.b;
  Shape s = b.type(acc).shape;
  ValueId y = b.mul(b.convert(acc, DType::kF32), multiplier);
  y = b.unary("round", y);
  DType out = b.type(yzp).dtype;
  y = b.add(y, b.broadcast_in_dim(b.convert(b.reshape(yzp, Shape{}), DType::kF32), s, {}));
  auto [lo, hi] = int_range(n, out);
  y = b.binary("min", b.binary("max", y, full_like(b, y, lo)), full_like(b, y, hi));
  return b.convert(y, out);
}

void qlinear_matmul(NodeCtx& n) {
  GraphBuilder& b = n.b;
  Shape as = n.shape(0), bs = n.shape(3);
  int64_t ra = static_cast<int64_t>(as.size()), rb = static_cast<int64_t>(bs.size());
  ValueId a = centered(b, n.x(0), n.x(2), as, ra - 2);
  ValueId c = centered(b, n.x(3), n.x(5), bs, rb - 1);
  ValueId acc = onnx_matmul(n, a, c);
  Shape ys = b.type(acc).shape;
  int64_t ry = static_cast<int64_t>(ys.size());
  auto fscale = [&](int i, std::optional<int64_t> axis) {
    ValueId v = b.convert(n.x(i), DType::kF32);
    Shape vs = b.type(v).shape;
    if (vs.size() == 1 && axis && !(vs[0] == Dim(1))) return b.broadcast_in_dim(v, ys, {*axis});
    return b.broadcast_in_dim(b.reshape(v, Shape{}), ys, {});
  };
  ValueId mult = b.div(b.mul(fscale(1, ry - 2), fscale(4, ry - 1)), fscale(6, std::nullopt));
  n.out(0, requantize(n, acc, mult, n.x(7)));
}

}  // namespace

void register_quant_ops(OpTable& t) {
  t["QuantizeLinear"] = quantize_linear;
  t["DequantizeLinear"] = dequantize_linear;
  t["DynamicQuantizeLinear"] = dynamic_quantize;
  t["QLinearMatMul"] = qlinear_matmul;
}

}  // namespace rlx::onnx
