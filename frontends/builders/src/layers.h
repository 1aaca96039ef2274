// Transformer building blocks shared by the encoder and decoder builders, written in HIR ops so
// a target can claim Attention, RoPE or the norms natively. Activations are [B, S, hidden] with
// B and S symbolic; attention works on [B, heads, S, head_dim].
#pragma once
#include <optional>
#include <string>

#include "rlx/core/builder.h"

namespace rlx::frontends::detail {

inline const Dim kBatch = Dim::symbol("B");
inline const Dim kSeq = Dim::symbol("S");
inline const Dim kCacheLen = Dim::symbol("T");

// A weight applied as x W^T, W [out, in]: f32, or, when qtype names a block format ("q4_k"),
// u8 rows [out, row bytes] that DequantMatMul decodes as it multiplies, so quantized matrices
// are never expanded in memory.
// With `scale` set, w is i8 [out, in] per output channel (rlx quantize's int8 schemes) and the
// product is a QMatMul: its activations are rounded to u8 per row at run time, or with
// x_scale / x_zero when those are set (int8 static).
struct LinearWeight {
  ValueId w = kNoValue;
  std::string qtype;
  ValueId scale = kNoValue, x_scale = kNoValue, x_zero = kNoValue;
  ValueId x_smooth = kNoValue;  // x is multiplied by it first (SmoothQuant), when set
};

// x W^T (+ bias) over the last axis of x.
ValueId linear(GraphBuilder& b, ValueId x, const LinearWeight& w, std::optional<ValueId> bias = {});
ValueId rms_norm(GraphBuilder& b, ValueId x, ValueId w, double eps);
ValueId layer_norm(GraphBuilder& b, ValueId x, ValueId w, ValueId bias, double eps);
// x [..., n * d] -> [..., n, d]
ValueId split_heads(GraphBuilder& b, ValueId x, int64_t n, int64_t d);
// [B, S, n, d] <-> [B, n, S, d]
ValueId swap_seq_heads(GraphBuilder& b, ValueId x);
// [B, n, S, d] -> [B, S, n * d]
ValueId merge_heads(GraphBuilder& b, ValueId x);
// "silu" | "gelu" (erf) | "gelu_tanh"
ValueId activation(GraphBuilder& b, ValueId x, const std::string& act);
// 0, 1, ..., len - 1 as i64[len] (len may be symbolic).
ValueId positions(GraphBuilder& b, const Dim& len);

// Scaled dot-product attention of q [B,H,Sq,D] over k, v [B,Hkv,Sk,D] (grouped kv heads) where
// query i may see key j only if keep[i, j] (bool [Sq, Sk], shared by every row and head). For
// masks the Attention op has no kind for (sliding windows); the op stays the path for the rest,
// so a target can claim it natively.
ValueId masked_attention(GraphBuilder& b, ValueId q, ValueId k, ValueId v, ValueId keep,
                         double scale);

}  // namespace rlx::frontends::detail
