// HIR neural-network ops and their MIR decompositions. Each decomposition is the op's
// definition: inference runs it on a scratch graph, the shared-IR path lowers through it.
#include <cmath>
#include <limits>

#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/builder.h"

namespace rlx {
using namespace ops;

namespace {

using Ins = std::vector<ValueId>;
using Outs = std::vector<ValueId>;

void expect_float(const TensorType& t, const char* op) {
  if (!is_float(t.dtype))
    fail("{} needs a floating-point operand, got {}", op, dtype_name(t.dtype));
}

// The product `y` (a dot_general) keeps the node's {tf32} allowance (--allow-tf32), which only
// a target with TF32 arithmetic acts on.
ValueId keep_tf32(GraphBuilder& b, const Node& n, ValueId y) {
  if (n.has_attr("tf32")) b.graph().nodes[b.graph().values[y].producer].attrs["tf32"] = int64_t{1};
  return y;
}

// numpy.matmul: [..., M, K] x [..., K, N] with broadcast batch dims; a rank-2 rhs is shared.
Outs matmul(GraphBuilder& b, const Node& n, const Ins& in) {
  TensorType ta = b.type(in[0]), tb = b.type(in[1]);
  if (ta.rank() < 2 || tb.rank() < 2)
    fail("MatMul needs operands of rank >= 2, got {} and {}", ta.str(), tb.str());
  int64_t ra = ta.rank(), rb = tb.rank();
  if (rb == 2) return {keep_tf32(b, n, b.dot_general(in[0], in[1], {}, {}, {ra - 1}, {0}))};
  Shape batch = broadcast_shapes(Shape(ta.shape.begin(), ta.shape.end() - 2),
                                 Shape(tb.shape.begin(), tb.shape.end() - 2));
  auto full = [&](ValueId v, const TensorType& t) {
    Shape s = batch;
    s.insert(s.end(), t.shape.end() - 2, t.shape.end());
    return b.broadcast_to(v, s);
  };
  ValueId a = full(in[0], ta), c = full(in[1], tb);
  auto nb = static_cast<int64_t>(batch.size());
  IntList bd;
  for (int64_t i = 0; i < nb; ++i) bd.push_back(i);
  return {keep_tf32(b, n, b.dot_general(a, c, bd, bd, {nb + 1}, {nb}))};
}

// Linear: y = x W^T (+ bias), W stored [out, in] as in PyTorch and safetensors checkpoints.
Outs linear(GraphBuilder& b, const Node& n, const Ins& in) {
  TensorType tx = b.type(in[0]), tw = b.type(in[1]);
  if (tw.rank() != 2) fail("Linear weight must be rank 2 [out, in], got {}", tw.str());
  ValueId y = keep_tf32(b, n, b.dot_general(in[0], in[1], {}, {}, {tx.rank() - 1}, {1}));
  if (in.size() == 3) y = b.add(y, b.broadcast_to(in[2], b.type(y).shape));
  return {y};
}

Outs softmax(GraphBuilder& b, const Node& n, const Ins& in) {
  expect_float(b.type(in[0]), "Softmax");
  int64_t axis = norm_axis(n.attr_int("axis", -1), b.type(in[0]).rank());
  ValueId m = b.reduce_keep(in[0], {axis}, ReduceKind::kMax);
  ValueId e = b.unary("exp", b.sub(in[0], m));
  return {b.div(e, b.reduce_keep(e, {axis}, ReduceKind::kSum))};
}

ValueId mean_keep(GraphBuilder& b, ValueId x, int64_t axis) {
  if (axis < 0) fail("normalisation needs an operand of rank >= 1");
  Dim d = b.type(x).shape[axis];
  if (!d.is_static()) fail("normalisation over a symbolic dim ({}) is not supported", d.sym);
  return b.div(b.reduce_keep(x, {axis}, ReduceKind::kSum),
               b.full_like(x, static_cast<double>(d.value)));
}

// Scales broadcast from the normalised (last) axis.
ValueId scale_last(GraphBuilder& b, ValueId x, ValueId s) {
  return b.broadcast_in_dim(s, b.type(x).shape, {b.type(x).rank() - 1});
}

Outs layer_norm(GraphBuilder& b, const Node& n, const Ins& in) {
  expect_float(b.type(in[0]), "LayerNorm");
  int64_t axis = b.type(in[0]).rank() - 1;
  double eps = n.attr_float("epsilon", 1e-5);
  ValueId x = in[0];
  ValueId centered = b.sub(x, mean_keep(b, x, axis));
  ValueId var = mean_keep(b, b.mul(centered, centered), axis);
  ValueId y = b.mul(centered, b.unary("rsqrt", b.add(var, b.full_like(var, eps))));
  if (in.size() > 1) y = b.mul(y, scale_last(b, y, in[1]));
  if (in.size() > 2) y = b.add(y, scale_last(b, y, in[2]));
  return {y};
}

Outs rms_norm(GraphBuilder& b, const Node& n, const Ins& in) {
  expect_float(b.type(in[0]), "RMSNorm");
  int64_t axis = b.type(in[0]).rank() - 1;
  double eps = n.attr_float("epsilon", 1e-6);
  ValueId ms = mean_keep(b, b.mul(in[0], in[0]), axis);
  ValueId y = b.mul(in[0], b.unary("rsqrt", b.add(ms, b.full_like(ms, eps))));
  if (in.size() > 1) y = b.mul(y, scale_last(b, y, in[1]));
  return {y};
}

// An activation of an f16/bf16 value is the f32 activation of the widened value, rounded once
// (decision 81), as PyTorch and ONNX Runtime compute one: rounding each step of the formula to
// 16 bits lost accuracy to no purpose, and on a GPU the two conversions around every step made
// the fused kernel compute-bound.
ValueId widen_16(GraphBuilder& b, ValueId x) {
  DType t = b.type(x).dtype;
  return t == DType::kF16 || t == DType::kBF16 ? b.convert(x, DType::kF32) : x;
}
ValueId round_to(GraphBuilder& b, ValueId y, DType t) {
  return b.type(y).dtype == t ? y : b.convert(y, t);
}

Outs gelu(GraphBuilder& b, const Node& n, const Ins& in) {
  expect_float(b.type(in[0]), "GELU");
  std::string approx = n.attr_string("approximate", "none");
  ValueId x = widen_16(b, in[0]);
  DType t = b.type(in[0]).dtype;
  ValueId half_x = b.mul(x, b.full_like(x, 0.5));
  if (approx == "none") {  // 0.5 x (1 + erf(x / sqrt 2))
    ValueId e = b.unary("erf", b.mul(x, b.full_like(x, M_SQRT1_2)));
    return {round_to(b, b.mul(half_x, b.add(e, b.full_like(x, 1.0))), t)};
  }
  if (approx == "tanh") {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ValueId x3 = b.mul(b.mul(x, x), x);
    ValueId inner = b.add(x, b.mul(x3, b.full_like(x, 0.044715)));
    ValueId th = b.unary("tanh", b.mul(inner, b.full_like(x, std::sqrt(2.0 / M_PI))));
    return {round_to(b, b.mul(half_x, b.add(th, b.full_like(x, 1.0))), t)};
  }
  fail("GELU: approximate must be \"none\" or \"tanh\", got \"{}\"", approx);
}

Outs silu(GraphBuilder& b, const Node&, const Ins& in) {
  expect_float(b.type(in[0]), "SiLU");
  ValueId x = widen_16(b, in[0]);
  return {round_to(b, b.mul(x, b.unary("logistic", x)), b.type(in[0]).dtype)};
}

Outs embedding(GraphBuilder& b, const Node&, const Ins& in) {
  if (b.type(in[0]).rank() != 2)
    fail("Embedding table must be rank 2, got {}", b.type(in[0]).str());
  return {b.op("gather", {in[0], in[1]}, {{"axis", int64_t{0}}})};
}

// RoPE(x, positions) rotates pairs (i, i + D/2) of the last dim ("half" layout, as in Llama and
// Qwen checkpoints) by angle position * base^(-2i/D). seq_axis names x's sequence dim.
Outs rope(GraphBuilder& b, const Node& n, const Ins& in) {
  TensorType tx = b.type(in[0]);
  expect_float(tx, "RoPE");
  TensorType tp = b.type(in[1]);
  if (tp.rank() != 1 || (tp.dtype != DType::kI64 && tp.dtype != DType::kI32))
    fail("RoPE positions must be a rank-1 integer tensor, got {}", tp.str());
  int64_t rank = tx.rank();
  int64_t seq_axis = norm_axis(n.attr_int("seq_axis", -2), rank, "seq_axis");
  if (seq_axis == rank - 1) fail("RoPE: seq_axis cannot be the last (head) dim");
  const Dim& dd = tx.shape[rank - 1];
  if (!dd.is_static() || dd.value % 2)
    fail("RoPE: head dim must be static and even, got {}", dd.str());
  if (!(tx.shape[seq_axis] == tp.shape[0]))
    fail("RoPE: x has {} positions on axis {}, positions has {}", tx.shape[seq_axis].str(),
         seq_axis, tp.shape[0].str());
  int64_t half = dd.value / 2;
  double base = n.attr_float("base", 10000.0);
  Tensor inv(DType::kF32, {half});
  for (int64_t i = 0; i < half; ++i)
    inv.as<float>()[i] = static_cast<float>(std::pow(base, -2.0 * i / dd.value));
  Shape ang_shape{tp.shape[0], half};
  ValueId pos = b.broadcast_in_dim(b.convert(in[1], DType::kF32), ang_shape, {0});
  ValueId ang = b.mul(pos, b.broadcast_in_dim(b.constant(inv), ang_shape, {1}));
  Shape hs = tx.shape;
  hs[rank - 1] = half;
  auto spread = [&](ValueId v) {
    return b.broadcast_in_dim(b.convert(v, tx.dtype), hs, {seq_axis, rank - 1});
  };
  ValueId c = spread(b.unary("cos", ang)), s = spread(b.unary("sin", ang));
  IntList start(rank, 0), lim1(rank, -1), lim2(rank, -1);
  for (int64_t i = 0; i < rank; ++i) {
    if (!tx.shape[i].is_static()) continue;
    lim1[i] = lim2[i] = tx.shape[i].value;
  }
  IntList start2 = start;
  start2[rank - 1] = half;
  lim1[rank - 1] = half;
  ValueId x1 = b.slice(in[0], start, lim1), x2 = b.slice(in[0], start2, lim2);
  ValueId r1 = b.sub(b.mul(x1, c), b.mul(x2, s));
  ValueId r2 = b.add(b.mul(x2, c), b.mul(x1, s));
  return {b.concat({r1, r2}, rank - 1)};
}

// Attention(q [B,H,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] [, mask [B,Sk]]) with grouped
// kv heads (H a multiple of Hkv). mask = "none" | "causal" | "padding"; causal aligns the last
// query with the last key, so decoding with a KV cache (Sq < Sk) is causal too. k and v may be
// of another float dtype than q (a KV cache kept in f16 read by f32 queries): they are read as
// converted to q's dtype, which is the dtype of all the arithmetic and of the result.
Outs attention(GraphBuilder& b, const Node& n, const Ins& in) {
  TensorType tq = b.type(in[0]), tk = b.type(in[1]), tv = b.type(in[2]);
  expect_float(tq, "Attention");
  if (!is_float(tk.dtype) || !is_float(tv.dtype))
    fail("Attention needs floating-point k and v, got {} and {}", dtype_name(tk.dtype),
         dtype_name(tv.dtype));
  if (tq.rank() != 4 || tk.rank() != 4 || tv.rank() != 4)
    fail("Attention needs rank-4 q, k, v [batch, heads, seq, dim], got {}, {}, {}", tq.str(),
         tk.str(), tv.str());
  std::string mask = n.attr_string("mask", "none");
  if (mask != "none" && mask != "causal" && mask != "padding")
    fail("Attention: mask must be \"none\", \"causal\" or \"padding\", got \"{}\"", mask);
  if ((mask == "padding") != (in.size() == 4))
    fail("Attention: mask \"{}\" {} a fourth (mask) input", mask,
         mask == "padding" ? "needs" : "takes no");
  const Dim &h = tq.shape[1], &hkv = tk.shape[1], &d = tq.shape[3];
  if (!h.is_static() || !hkv.is_static() || !d.is_static())
    fail("Attention: head counts and head dim must be static");
  if (h.value <= 0 || hkv.value <= 0)
    fail("Attention: head counts must be positive, got {} and {}", h.value, hkv.value);
  if (h.value % hkv.value)
    fail("Attention: {} query heads is not a multiple of {} kv heads", h.value, hkv.value);
  auto expand = [&](ValueId kv) {  // [B,Hkv,S,D] -> [B,H,S,D]
    if (h.value == hkv.value) return kv;
    Shape s = b.type(kv).shape;
    Shape wide{s[0], hkv, h.value / hkv.value, s[2], s[3]};
    return b.reshape(b.broadcast_in_dim(kv, wide, {0, 1, 3, 4}), Shape{s[0], h, s[2], s[3]});
  };
  ValueId k = expand(b.convert(in[1], tq.dtype)), v = expand(b.convert(in[2], tq.dtype));
  double scale = n.attr_float("scale", 1.0 / std::sqrt(static_cast<double>(d.value)));
  ValueId scores = b.dot_general(in[0], k, {0, 1}, {0, 1}, {3}, {3});  // [B,H,Sq,Sk]
  scores = b.mul(scores, b.full_like(scores, scale));
  Shape ss = b.type(scores).shape;
  // Masked scores become the dtype's lowest finite value, as Hugging Face's masks do, not -inf:
  // a row whose every key is masked (an all-zero attention_mask) then averages V uniformly
  // instead of dividing 0 by 0 into NaN; any visible key still takes all the weight.
  const DType sd = b.type(scores).dtype;
  const double lowest = sd == DType::kF16    ? -65504.0
                        : sd == DType::kBF16 ? -3.3895313892515355e38
                        : sd == DType::kF32
                            ? static_cast<double>(std::numeric_limits<float>::lowest())
                            : std::numeric_limits<double>::lowest();
  ValueId neg = b.full_like(scores, lowest);
  if (mask == "causal") {
    Shape qk{ss[2], ss[3]};
    ValueId row = b.op("iota", {}, {{"shape", qk}, {"dim", int64_t{0}}, {"dtype", DType::kI64}});
    ValueId col = b.op("iota", {}, {{"shape", qk}, {"dim", int64_t{1}}, {"dtype", DType::kI64}});
    // keep col <= row + (Sk - Sq)
    ValueId sq = b.op("dim_size", {scores}, {{"dim", int64_t{2}}});
    ValueId sk = b.op("dim_size", {scores}, {{"dim", int64_t{3}}});
    ValueId off = b.broadcast_in_dim(b.sub(sk, sq), qk, {});
    ValueId keep = b.binary("le", col, b.add(row, off));
    scores = b.select(b.broadcast_in_dim(keep, ss, {2, 3}), scores, neg);
  } else if (mask == "padding") {
    TensorType tm = b.type(in[3]);
    if (tm.rank() != 2) fail("Attention: padding mask must be [batch, kv_seq], got {}", tm.str());
    ValueId m = in[3];
    ValueId keep = tm.dtype == DType::kBool ? m : b.binary("ne", m, b.full_like(m, 0.0));
    scores = b.select(b.broadcast_in_dim(keep, ss, {0, 3}), scores, neg);
  }
  Node sm;
  sm.op = "Softmax";
  ValueId p = softmax(b, sm, {scores})[0];
  return {b.dot_general(p, v, {0, 1}, {0, 1}, {3}, {2})};  // [B,H,Sq,Dv]
}

// Conv (NCHW, 2-D) has no decomposition of its own: it is lowered natively or through the
// registered im2col rewrite (dispatch_rewrites.cpp).
std::vector<TensorType> infer_conv(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &x = in[0], &w = in[1];
  expect_same_dtype(in, "Conv");
  if (x.rank() != 4 || w.rank() != 4)
    fail("Conv needs x [N,C,H,W] and w [O,C,KH,KW], got {} and {}", x.str(), w.str());
  IntList strides = n.has_attr("strides") ? n.attr_ints("strides") : IntList{1, 1};
  IntList pads = n.has_attr("pads") ? n.attr_ints("pads") : IntList{0, 0, 0, 0};
  if (strides.size() != 2 || pads.size() != 4)
    fail("Conv: strides needs 2 entries and pads 4 (top, left, bottom, right)");
  for (int i = 1; i < 4; ++i)
    if (!x.shape[i].is_static() || !w.shape[i].is_static())
      fail("Conv: channel and spatial dims must be static");
  if (x.shape[1].value != w.shape[1].value)
    fail("Conv: x has {} channels, w expects {}", x.shape[1].value, w.shape[1].value);
  if (in.size() == 3 && !(in[2].shape == Shape{w.shape[0]}))
    fail("Conv: bias must be [{}]", w.shape[0].str());
  Shape out{x.shape[0], w.shape[0]};
  for (int i = 0; i < 2; ++i) {
    int64_t span = x.shape[2 + i].value + pads[i] + pads[2 + i] - w.shape[2 + i].value;
    if (span < 0 || strides[i] < 1) fail("Conv: kernel larger than padded input or bad stride");
    out.push_back(span / strides[i] + 1);
  }
  return one(tt(x.dtype, out));
}

}  // namespace

void hir_nn_ops(OpFamily& r) {
  auto add = [&](const std::string& name, int min_in, int max_in, DecomposeFn dec, SampleFn sample,
                 std::string summary) {
    OpDef d{name, OpLevel::kHir, OpClass::kOpaque, min_in, max_in, 1};
    d.infer = infer_by_decomposition(dec);
    d.decompose = std::move(dec);
    d.sample = std::move(sample);
    d.summary = std::move(summary);
    r.add(std::move(d));
  };
  auto fsample = [](std::vector<Shape> shapes, Attrs attrs = {}) -> SampleFn {
    return [=](DType d) -> std::optional<OpSample> {
      if (!is_float(d)) return std::nullopt;
      std::vector<TensorType> in;
      for (auto& s : shapes) in.push_back(tt(d, s));
      return sample_of(in, attrs);
    };
  };
  add(
      "MatMul", 2, 2, matmul,
      [](DType d) -> std::optional<OpSample> {
        if (d == DType::kBool) return std::nullopt;
        return sample_of({tt(d, {2, 3}), tt(d, {3, 4})});
      },
      "numpy matmul with broadcast batch dims");
  add("Linear", 2, 3, linear, fsample({{2, 3}, {4, 3}, {4}}), "x W^T + b, W as [out, in]");
  add("Softmax", 1, 1, softmax, fsample({{2, 3}}), "softmax over axis (default -1)");
  add("LayerNorm", 1, 3, layer_norm, fsample({{2, 3}, {3}, {3}}), "layer norm over the last axis");
  add("RMSNorm", 1, 2, rms_norm, fsample({{2, 3}, {3}}), "RMS norm over the last axis");
  add("GELU", 1, 1, gelu, fsample({{2, 3}}), "GELU, approximate = none (erf) | tanh");
  add("SiLU", 1, 1, silu, fsample({{2, 3}}), "x * sigmoid(x)");
  add(
      "Embedding", 2, 2, embedding,
      [](DType d) {
        return sample_of({tt(d, {5, 3}), tt(DType::kI64, {2, 4})});
      },
      "rows of a table at integer ids");
  add(
      "RoPE", 2, 2, rope,
      [](DType d) -> std::optional<OpSample> {
        if (!is_float(d)) return std::nullopt;
        return sample_of({tt(d, {1, 3, 2, 4}), tt(DType::kI64, {3})}, {{"seq_axis", int64_t{1}}});
      },
      "rotary position embedding, half layout");
  add(
      "Attention", 3, 4, attention,
      [](DType d) -> std::optional<OpSample> {
        if (!is_float(d)) return std::nullopt;
        return sample_of({tt(d, {1, 2, 3, 4}), tt(d, {1, 1, 3, 4}), tt(d, {1, 1, 3, 4})},
                         {{"mask", std::string("causal")}});
      },
      "scaled dot-product attention with none | causal | padding mask, grouped kv heads");
  OpDef conv{"Conv", OpLevel::kHir, OpClass::kOpaque, 2, 3, 1};
  conv.infer = infer_conv;
  conv.sample = [](DType d) -> std::optional<OpSample> {
    if (!is_float(d)) return std::nullopt;
    return sample_of({tt(d, {1, 2, 5, 5}), tt(d, {3, 2, 3, 3})});
  };
  conv.summary = "2-D convolution, NCHW; no decomposition (native or im2col rewrite)";
  r.add(std::move(conv));
}

}  // namespace rlx
