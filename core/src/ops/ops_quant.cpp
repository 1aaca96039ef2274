// HIR ops on ggml block formats (rlx/core/quant.h), the way GGUF files carry weights:
//   DequantMatMul(x f32[..., K], w u8[N, row_bytes(qtype, K)]) {qtype = "q4_k"} -> f32[..., N]
//     y = x W^T, W decoded row by row (a Linear whose weight stays quantized)
//     {activations = "q8"}: x is first rounded to 8-bit blocks (32 elements, or 256 for the K
//     formats; d = max|x| / 127, q = round(x / d)) and each block product is an integer sum, as
//     in llama.cpp; "f32" (the default) multiplies the decoded weights by x as it is
//   DequantizeRows(w u8[..., row_bytes(qtype, K)]) {qtype, k = K} -> f32[..., K]
//     decodes rows, e.g. the few embedding-table rows a Embedding gathered
//   QMatMul(x f32[..., K], w i8[N, K], w_scale f32[N] [, x_scale f32[], x_zero u8[]] [, bias f32[N]])
//     -> f32[..., N]
//     y = x W^T with W = w_scale[n] * w (per-channel symmetric int8) and x rounded to u8:
//     with three inputs each row of x gets its own range at run time (int8 dynamic), with five
//     x_scale and x_zero are fixed (int8 static, from calibration); rlx/core/quantize.h has the
//     arithmetic. The integer products are exact (i32); the result is f32, plus bias when given
//     (a fourth input after the dynamic form's three, a sixth after the static form's five).
//   QConv(x f32[N, C, H, W], w i8[O, C / group, KH, KW], w_scale f32[O], x_scale f32[],
//         x_zero u8[] [, bias f32[O]]) {strides = [SH, SW], pads = [top, left, bottom, right],
//         group} -> f32[N, O, OH, OW]
//     the 2-D convolution (NCHW, as Conv) of x rounded to u8 with the calibrated scale and zero
//     by W = w_scale[o] * w, grouped (group = C: depthwise); the padding is x's zero point, so
//     it adds nothing. Static form only: the int8 targets bake every parameter into their code.
// There is no MIR decomposition yet (MIR has no block-format primitives), so only a target
// that claims them natively lowers them; other targets refuse them with that reason.
#include "ops/op_family.h"
#include "ops/op_helpers.h"
#include "rlx/core/quant.h"

namespace rlx {
using namespace ops;

namespace {

std::vector<TensorType> infer_dequant_matmul(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &x = in[0], &w = in[1];
  std::string qname = n.attr_string("qtype", "");
  const quant::QTypeInfo* q = quant::find_qtype(qname);
  if (!q) fail("DequantMatMul: qtype \"{}\" is not a known block format", qname);
  if (x.dtype != DType::kF32) fail("DequantMatMul takes f32 activations, got {}", x.str());
  if (x.rank() < 1) fail("DequantMatMul: x must have rank >= 1, got {}", x.str());
  if (w.dtype != DType::kU8 || w.rank() != 2)
    fail("DequantMatMul: w must be u8[N, row bytes], got {}", w.str());
  const Dim& k = x.shape.back();
  if (!k.is_static() || !w.shape[0].is_static() || !w.shape[1].is_static())
    fail("DequantMatMul: K ({}) and the weight's shape ({}) must be static", k.str(), w.str());
  auto bytes = quant::row_bytes(q->type, k.value);
  if (!bytes)
    fail("DequantMatMul: K = {} is not a whole number of {} blocks ({} elements each)", k.value,
         qname, q->block_size);
  if (*bytes != w.shape[1].value)
    fail("DequantMatMul: a {} row of {} elements takes {} bytes, w has {}", qname, k.value, *bytes,
         w.shape[1].value);
  const std::string act = n.attr_string("activations", "f32");
  if (act != "f32" && act != "q8")
    fail("DequantMatMul: activations must be \"f32\" or \"q8\", got \"{}\"", act);
  if (act == "q8" && q->block_size != 32 && q->block_size != 256)
    fail("DequantMatMul: activations = \"q8\" needs a block format of 32 or 256 elements, not {}",
         qname);
  Shape out = x.shape;
  out.back() = w.shape[0];
  return one(tt(DType::kF32, out));
}

std::vector<TensorType> infer_dequantize_rows(const std::vector<TensorType>& in, const Node& n) {
  const TensorType& w = in[0];
  std::string qname = n.attr_string("qtype", "");
  const quant::QTypeInfo* q = quant::find_qtype(qname);
  if (!q) fail("DequantizeRows: qtype \"{}\" is not a known block format", qname);
  if (w.dtype != DType::kU8 || w.rank() < 1 || !w.shape.back().is_static())
    fail("DequantizeRows: w must be u8[..., row bytes] with static row bytes, got {}", w.str());
  int64_t k = n.attr_int("k", -1);
  auto bytes = quant::row_bytes(q->type, k);
  if (!bytes || *bytes != w.shape.back().value)
    fail("DequantizeRows: k = {} elements of {} do not take the {} bytes of a row", k, qname,
         w.shape.back().value);
  Shape out = w.shape;
  out.back() = k;
  return one(tt(DType::kF32, out));
}

// A tensor of one element: rank 0, or every dim static 1.
bool single(const TensorType& t) {
  for (const Dim& d : t.shape)
    if (!(d == Dim(1))) return false;
  return true;
}

std::vector<TensorType> infer_qmatmul(const std::vector<TensorType>& in, const Node&) {
  const TensorType &x = in[0], &w = in[1], &ws = in[2];
  if (x.dtype != DType::kF32 || x.rank() < 1)
    fail("QMatMul takes f32 activations of rank >= 1, got {}", x.str());
  if (w.dtype != DType::kI8 || w.rank() != 2 || !w.shape[0].is_static() || !w.shape[1].is_static())
    fail("QMatMul: w must be i8[N, K] with static N and K, got {}", w.str());
  if (!(x.shape.back() == w.shape[1]))
    fail("QMatMul: x has K = {}, w has K = {}", x.shape.back().str(), w.shape[1].str());
  if (ws.dtype != DType::kF32 || ws.rank() != 1 || !(ws.shape[0] == w.shape[0]))
    fail("QMatMul: w_scale must be f32[{}] (one scale per row of w), got {}", w.shape[0].str(),
         ws.str());
  const bool fixed = in.size() >= 5;
  if (in.size() == 4 || in.size() == 6) {
    const TensorType& b = in.back();
    if (b.dtype != DType::kF32 || b.rank() != 1 || !(b.shape[0] == w.shape[0]))
      fail("QMatMul: bias must be f32[{}], got {}", w.shape[0].str(), b.str());
  }
  if (fixed) {
    if (in[3].dtype != DType::kF32 || !single(in[3]))
      fail("QMatMul: x_scale must be one f32, got {}", in[3].str());
    if (in[4].dtype != DType::kU8 || !single(in[4]))
      fail("QMatMul: x_zero must be one u8, got {}", in[4].str());
  }
  Shape out = x.shape;
  out.back() = w.shape[0];
  return one(tt(DType::kF32, out));
}

std::vector<TensorType> infer_qconv(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &x = in[0], &w = in[1], &ws = in[2];
  if (x.dtype != DType::kF32 || x.rank() != 4)
    fail("QConv takes f32 activations [N, C, H, W], got {}", x.str());
  if (w.dtype != DType::kI8 || w.rank() != 4)
    fail("QConv: w must be i8[O, C / group, KH, KW], got {}", w.str());
  for (int i = 0; i < 4; ++i)
    if (!w.shape[i].is_static() || (i > 0 && !x.shape[i].is_static()))
      fail("QConv: the weight's shape and x's channel and spatial dims must be static");
  const int64_t group = n.attr_int("group", 1), o = w.shape[0].value;
  if (group < 1 || o % group != 0 || x.shape[1].value != w.shape[1].value * group)
    fail("QConv: x has {} channels and w {} per group in {} groups of {} outputs", x.shape[1].value,
         w.shape[1].value, group, o);
  if (ws.dtype != DType::kF32 || ws.rank() != 1 || !(ws.shape[0] == w.shape[0]))
    fail("QConv: w_scale must be f32[{}] (one scale per output channel), got {}", o, ws.str());
  if (in[3].dtype != DType::kF32 || !single(in[3]))
    fail("QConv: x_scale must be one f32, got {}", in[3].str());
  if (in[4].dtype != DType::kU8 || !single(in[4]))
    fail("QConv: x_zero must be one u8, got {}", in[4].str());
  if (in.size() == 6 &&
      (in[5].dtype != DType::kF32 || in[5].rank() != 1 || !(in[5].shape[0] == w.shape[0])))
    fail("QConv: bias must be f32[{}], got {}", o, in[5].str());
  IntList st = n.has_attr("strides") ? n.attr_ints("strides") : IntList{1, 1};
  IntList pads = n.has_attr("pads") ? n.attr_ints("pads") : IntList{0, 0, 0, 0};
  if (st.size() != 2 || pads.size() != 4)
    fail("QConv: strides needs 2 entries and pads 4 (top, left, bottom, right)");
  Shape out{x.shape[0], w.shape[0]};
  for (int i = 0; i < 2; ++i) {
    const int64_t span = x.shape[2 + i].value + pads[i] + pads[2 + i] - w.shape[2 + i].value;
    if (span < 0 || st[i] < 1 || pads[i] < 0 || pads[2 + i] < 0)
      fail("QConv: the kernel is larger than the padded input, or a stride or pad is invalid");
    out.push_back(span / st[i] + 1);
  }
  return one(tt(DType::kF32, out));
}

}  // namespace

void quant_ops(OpFamily& f) {
  OpDef d{"DequantMatMul", OpLevel::kHir, OpClass::kOpaque, 2, 2, 1};
  d.infer = infer_dequant_matmul;
  d.sample = [](DType dt) -> std::optional<OpSample> {
    if (dt != DType::kF32) return std::nullopt;
    return sample_of({tt(DType::kF32, {2, 32}), tt(DType::kU8, {3, 18})},
                     {{"qtype", std::string("q4_0")}});
  };
  d.summary = "x W^T with W in a ggml block format {qtype}; native only (no MIR decomposition)";
  OpDef r{"DequantizeRows", OpLevel::kHir, OpClass::kOpaque, 1, 1, 1};
  r.infer = infer_dequantize_rows;
  r.sample = [](DType dt) -> std::optional<OpSample> {
    if (dt != DType::kF32) return std::nullopt;
    return sample_of({tt(DType::kU8, {3, 18})},
                     {{"qtype", std::string("q4_0")}, {"k", int64_t{32}}});
  };
  r.summary = "rows in a ggml block format {qtype, k} to f32; native only (no MIR decomposition)";
  OpDef q{"QMatMul", OpLevel::kHir, OpClass::kOpaque, 3, 6, 1};
  q.infer = infer_qmatmul;
  q.sample = [](DType dt) -> std::optional<OpSample> {
    if (dt != DType::kF32) return std::nullopt;
    return sample_of({tt(DType::kF32, {2, 32}), tt(DType::kI8, {3, 32}), tt(DType::kF32, {3})},
                     {});
  };
  q.summary =
      "x W^T, W int8 per output channel, x rounded to u8 per row at run time (3 inputs) or with "
      "a calibrated scale and zero (5), plus an optional bias; native only (no MIR "
      "decomposition)";
  OpDef c{"QConv", OpLevel::kHir, OpClass::kOpaque, 5, 6, 1};
  c.infer = infer_qconv;
  c.sample = [](DType dt) -> std::optional<OpSample> {
    if (dt != DType::kF32) return std::nullopt;
    return sample_of({tt(DType::kF32, {1, 2, 5, 5}), tt(DType::kI8, {3, 2, 3, 3}),
                      tt(DType::kF32, {3}), tt(DType::kF32, {}), tt(DType::kU8, {})},
                     {{"pads", IntList{1, 1, 1, 1}}});
  };
  c.summary =
      "2-D convolution (NCHW) of x rounded to u8 with a calibrated scale and zero by int8 "
      "weights per output channel {strides, pads, group}, plus an optional bias; native only";
  f.add(std::move(d));
  f.add(std::move(r));
  f.add(std::move(q));
  f.add(std::move(c));
}

}  // namespace rlx
