// Fused scaled dot-product attention on the cpu, f32: the native lowering of the HIR Attention
// op (core/src/ops/ops_hir_nn.cpp), computing what its decomposition computes without
// materialising the [B, H, Sq, Sk] scores: per tile of query rows and block of keys,
// S = Q K^T * scale, masked, folded into a running max and sum (online softmax), O += P V.
#pragma once
#include <cstdint>

#include "nn_simd.h"

namespace rlx::cpu {

struct AttentionShape {
  int64_t batch = 1, heads = 1, kv_heads = 1;  // heads is a multiple of kv_heads (grouped kv)
  int64_t q_len = 1, kv_len = 1, head_dim = 1, v_dim = 1;
  float scale = 1;
  bool causal = false;            // key j visible to query i iff j <= i + kv_len - q_len
  const uint8_t* keep = nullptr;  // padding mask [batch, kv_len], 0 = masked; null = none
};

// q [B,H,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] -> out [B,H,Sq,Dv], all contiguous. Rows that
// see no key come out NaN, as the decomposition's softmax over all -inf does. Parallel over
// batch x kv heads x query tiles with oneTBB.
void attention_f32(const AttentionShape& s, const float* q, const float* k, const float* v,
                   float* out, const NnSimd& simd);

}  // namespace rlx::cpu
