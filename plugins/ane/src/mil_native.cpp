#include "mil_native.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rlx/core/error.h"

namespace rlx::ane {

namespace {

int64_t rank_of(const MilBlock& b, const std::string& x) {
  return static_cast<int64_t>(b.type_of(x).shape.size());
}

MilType with_last(MilType t, int64_t last) {
  t.shape.back() = last;
  return t;
}

// Columns [c0, c1) of the i8 matrix w [N, K].
Tensor columns(const Tensor& w, int64_t c0, int64_t c1) {
  const int64_t n = w.shape()[0], k = w.shape()[1];
  Tensor out(DType::kI8, {n, c1 - c0});
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(out.as<int8_t>() + r * (c1 - c0), w.as<int8_t>() + r * k + c0,
                static_cast<size_t>(c1 - c0));
  return out;
}

// QMatMul as rlx/core/quantize.h and the cpu's int8 GEMM compute it:
//   s, z  = the u8 parameters of each row of x (its range widened to hold 0; scale 1 for an
//           empty range), or the calibrated x_scale and x_zero (static form);
//   xq    = clamp(round_half_even(x / s) + z, 0, 255);
//   acc   = sum_k (xq - z) w[n, k], exact integers;
//   y     = (s * w_scale[n]) * f32(acc) (+ bias[n]).
// The weight is int8 in the package (constexpr_affine_dequantize, scale 1: integers in fp32);
// the products run as MIL linear over chunks of K short enough that fp32 sums stay exact, the
// chunks added in int32 and converted once, as the cpu's i32 sum is.
std::string emit_qmatmul(MilBlock& b, const NativeOperands& op) {
  const Node& n = op.node;
  const size_t count = n.inputs.size();
  const Tensor* w = op.held.at(1);
  if (!w || w->dtype() != DType::kI8)
    throw_unsupported(fmt::format(
        "ane: the int8 weight of {} (QMatMul) is computed; the package holds int8 weights as "
        "constexpr_affine_dequantize, which takes constants only",
        op.where));
  const bool fixed = count >= 5;
  const std::string& x = op.inputs.at(0);
  const MilType xt = b.type_of(x);
  const int64_t rank = rank_of(b, x), k = w->shape()[1], rows_n = w->shape()[0];
  MilType rows = with_last(xt, 1);
  MilType flags = rows;
  flags.dtype = mil::BOOL;
  const std::string zero = b.f32(0.0);
  std::string s, z;
  if (fixed) {
    const Tensor* zp = op.held.at(4);
    if (!zp || zp->dtype() != DType::kU8)
      throw_unsupported(fmt::format(
          "ane: the zero point of {} (QMatMul) is computed; ane takes a constant one", op.where));
    s = b.op("reshape", {{"x", op.inputs.at(3)}, {"shape", b.ints({})}}, {mil::FLOAT32, {}});
    z = b.f32(static_cast<double>(*static_cast<const uint8_t*>(zp->data())));
  } else {
    const std::vector<MilArg> over_k = {
        {"x", x}, {"axes", b.ints({rank - 1})}, {"keep_dims", b.boolean(true)}};
    const std::string lo =
        b.op("minimum", {{"x", b.op("reduce_min", over_k, rows)}, {"y", zero}}, rows);
    const std::string hi =
        b.op("maximum", {{"x", b.op("reduce_max", over_k, rows)}, {"y", zero}}, rows);
    const std::string step = b.op(
        "real_div", {{"x", b.op("sub", {{"x", hi}, {"y", lo}}, rows)}, {"y", b.f32(255.0)}}, rows);
    const std::string nonempty = b.op("greater", {{"x", hi}, {"y", lo}}, flags);
    s = b.op("select", {{"cond", nonempty}, {"a", step}, {"b", b.f32(1.0)}}, rows);
    const std::string neg_lo = b.op("mul", {{"x", lo}, {"y", b.f32(-1.0)}}, rows);
    const std::string at =
        b.op("round", {{"x", b.op("real_div", {{"x", neg_lo}, {"y", s}}, rows)}}, rows);
    z = b.op("clip", {{"x", at}, {"alpha", zero}, {"beta", b.f32(255.0)}}, rows);
  }
  const std::string scaled = b.op("round", {{"x", b.op("real_div", {{"x", x}, {"y", s}}, xt)}}, xt);
  const std::string xq = b.op(
      "clip",
      {{"x", b.op("add", {{"x", scaled}, {"y", z}}, xt)}, {"alpha", zero}, {"beta", b.f32(255.0)}},
      xt);
  const std::string centred = b.op("sub", {{"x", xq}, {"y", z}}, xt);

  const MilType sums = with_last(xt, rows_n);
  std::vector<std::string> parts;
  for (int64_t c0 = 0; c0 < k; c0 += kExactInt8Chunk) {
    const int64_t c1 = std::min(k, c0 + kExactInt8Chunk);
    std::string part = centred;
    if (c1 - c0 != k) {
      std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end = xt.shape;
      begin.back() = c0;
      end.back() = c1;
      part = b.op("slice_by_index",
                  {{"x", centred},
                   {"begin", b.ints(begin)},
                   {"end", b.ints(end)},
                   {"stride", b.ints(std::vector<int64_t>(static_cast<size_t>(rank), 1))}},
                  with_last(xt, c1 - c0));
    }
    const std::string weight = b.int8_weight(c1 - c0 == k ? *w : columns(*w, c0, c1));
    parts.push_back(b.op("linear", {{"x", part}, {"weight", weight}}, sums));
  }
  std::string acc = parts[0];
  if (parts.size() > 1) {
    MilType ints = sums;
    ints.dtype = mil::INT32;
    auto to_int = [&](const std::string& v) {
      return b.op("cast", {{"x", v}, {"dtype", b.string("int32")}}, ints);
    };
    std::string total = to_int(parts[0]);
    for (size_t i = 1; i < parts.size(); ++i)
      total = b.op("add", {{"x", total}, {"y", to_int(parts[i])}}, ints);
    acc = b.op("cast", {{"x", total}, {"dtype", b.string("fp32")}}, sums);
  }
  MilType scale_t = fixed ? MilType{mil::FLOAT32, {rows_n}} : with_last(xt, rows_n);
  const std::string scale = b.op("mul", {{"x", s}, {"y", op.inputs.at(2)}}, scale_t);
  std::string y = b.op("mul", {{"x", scale}, {"y", acc}}, op.out);
  if (count == 4 || count == 6) y = b.op("add", {{"x", y}, {"y", op.inputs.back()}}, op.out);
  return y;
}

}  // namespace

std::string emit_native(MilBlock& b, const NativeOperands& op) {
  const Node& n = op.node;
  const MilType& out = op.out;
  const std::vector<std::string>& in = op.inputs;
  if (n.op == "QMatMul") return emit_qmatmul(b, op);
  if (n.op == "Linear") {
    // MIL's linear takes its weight and bias as consts; computed ones go through matmul.
    const bool consts = b.is_const(in[1]) && (in.size() < 3 || b.is_const(in[2]));
    if (consts) {
      std::vector<MilArg> args = {{"x", in[0]}, {"weight", in[1]}};
      if (in.size() > 2) args.emplace_back("bias", in[2]);
      return b.op("linear", args, out);
    }
    std::string y = b.op("matmul",
                         {{"x", in[0]},
                          {"y", in[1]},
                          {"transpose_x", b.boolean(false)},
                          {"transpose_y", b.boolean(true)}},
                         out);
    if (in.size() > 2) y = b.op("add", {{"x", y}, {"y", in[2]}}, out);
    return y;
  }
  if (n.op == "MatMul")
    return b.op("matmul",
                {{"x", in[0]},
                 {"y", in[1]},
                 {"transpose_x", b.boolean(false)},
                 {"transpose_y", b.boolean(false)}},
                out);
  if (n.op == "Softmax") {
    int64_t axis = n.attr_int("axis", -1);
    if (axis < 0) axis += rank_of(b, in[0]);
    return b.op("softmax", {{"x", in[0]}, {"axis", b.i32(axis)}}, out);
  }
  if (n.op == "GELU") {
    const bool tanh = n.attr_string("approximate", "none") == "tanh";
    return b.op("gelu", {{"x", in[0]}, {"mode", b.string(tanh ? "TANH_APPROXIMATION" : "EXACT")}},
                out);
  }
  // LayerNorm over the last axis; MIL's gamma and beta are consts, computed ones are applied
  // after it.
  std::vector<MilArg> args = {{"x", in[0]},
                              {"axes", b.ints({rank_of(b, in[0]) - 1})},
                              {"epsilon", b.f32(n.attr_float("epsilon", 1e-5))}};
  bool consts = true;
  for (size_t k = 1; k < in.size(); ++k) consts = consts && b.is_const(in[k]);
  if (consts) {
    if (in.size() > 1) args.emplace_back("gamma", in[1]);
    if (in.size() > 2) args.emplace_back("beta", in[2]);
    return b.op("layer_norm", args, out);
  }
  std::string y = b.op("layer_norm", args, out);
  if (in.size() > 1) y = b.op("mul", {{"x", y}, {"y", in[1]}}, out);
  if (in.size() > 2) y = b.op("add", {{"x", y}, {"y", in[2]}}, out);
  return y;
}

}  // namespace rlx::ane
