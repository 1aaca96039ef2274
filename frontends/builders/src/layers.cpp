#include "layers.h"

#include <fmt/format.h>

#include <cmath>

#include "rlx/core/error.h"

namespace rlx::frontends::detail {

ValueId linear(GraphBuilder& b, ValueId x, const LinearWeight& w, std::optional<ValueId> bias) {
  if (w.scale != kNoValue) {
    // The bias goes in: the product's epilogue adds it, and a consumer (GELU) is then the one
    // elementwise kernel the cpu fuses after it.
    // Smoothed (int8 static): the activations' outlier channels scaled down, the weight's
    // columns having been scaled up by as much when it was quantized.
    if (w.x_smooth != kNoValue) x = b.op("Mul", {x, w.x_smooth});
    std::vector<ValueId> in = {x, w.w, w.scale};
    if (w.x_scale != kNoValue) in.insert(in.end(), {w.x_scale, w.x_zero});
    if (bias) in.push_back(*bias);
    return b.op("QMatMul", in);
  }
  if (w.qtype.empty()) {
    if (bias) return b.op("Linear", {x, w.w, *bias});
    return b.op("Linear", {x, w.w});
  }
  ValueId y = b.op("DequantMatMul", {x, w.w}, {{"qtype", w.qtype}});
  return bias ? b.op("Add", {y, *bias}) : y;
}

ValueId rms_norm(GraphBuilder& b, ValueId x, ValueId w, double eps) {
  return b.op("RMSNorm", {x, w}, {{"epsilon", eps}});
}

ValueId layer_norm(GraphBuilder& b, ValueId x, ValueId w, ValueId bias, double eps) {
  return b.op("LayerNorm", {x, w, bias}, {{"epsilon", eps}});
}

ValueId split_heads(GraphBuilder& b, ValueId x, int64_t n, int64_t d) {
  Shape s = b.type(x).shape;
  s.back() = n;
  s.push_back(d);
  return b.op("Reshape", {x}, {{"shape", s}});
}

ValueId swap_seq_heads(GraphBuilder& b, ValueId x) {
  return b.op("Transpose", {x}, {{"perm", IntList{0, 2, 1, 3}}});
}

ValueId merge_heads(GraphBuilder& b, ValueId x) {
  ValueId t = swap_seq_heads(b, x);
  Shape s = b.type(t).shape;
  Shape merged{s[0], s[1], s[2].value * s[3].value};
  return b.op("Reshape", {t}, {{"shape", merged}});
}

ValueId activation(GraphBuilder& b, ValueId x, const std::string& act) {
  if (act == "silu") return b.op("SiLU", {x});
  if (act == "gelu") return b.op("GELU", {x}, {{"approximate", std::string("none")}});
  if (act == "gelu_tanh") return b.op("GELU", {x}, {{"approximate", std::string("tanh")}});
  throw_user_error(fmt::format("unsupported activation '{}' (rlx has silu, gelu, gelu_tanh)", act));
}

ValueId positions(GraphBuilder& b, const Dim& len) {
  return b.op("iota", {}, {{"shape", Shape{len}}, {"dim", int64_t{0}}, {"dtype", DType::kI64}});
}

ValueId masked_attention(GraphBuilder& b, ValueId q, ValueId k, ValueId v, ValueId keep,
                         double scale) {
  const Shape qs = b.type(q).shape, ks = b.type(k).shape;
  const int64_t heads = qs[1].value, kv_heads = ks[1].value;
  auto expand = [&](ValueId kv) {  // [B,Hkv,S,D] -> [B,H,S,D], each kv head shared by a group
    if (heads == kv_heads) return kv;
    Shape s = b.type(kv).shape;
    Shape wide{s[0], s[1], heads / kv_heads, s[2], s[3]};
    return b.reshape(b.broadcast_in_dim(kv, wide, {0, 1, 3, 4}), Shape{s[0], heads, s[2], s[3]});
  };
  ValueId scores = b.dot_general(q, expand(k), {0, 1}, {0, 1}, {3}, {3});  // [B,H,Sq,Sk]
  scores = b.mul(scores, b.full_like(scores, scale));
  const Shape ss = b.type(scores).shape;
  scores = b.select(b.broadcast_in_dim(keep, ss, {2, 3}), scores, b.full_like(scores, -INFINITY));
  ValueId p = b.op("Softmax", {scores}, {{"axis", int64_t{-1}}});
  return b.dot_general(p, expand(v), {0, 1}, {0, 1}, {3}, {2});  // [B,H,Sq,D]
}

}  // namespace rlx::frontends::detail
