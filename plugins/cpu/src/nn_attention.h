// Fused scaled dot-product attention on the cpu, computing in f32: the native lowering of the HIR
// Attention op (core/src/ops/ops_hir_nn.cpp), computing what its decomposition computes without
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
  KvElem k_elem = KvElem::kF32, v_elem = KvElem::kF32;  // how k and v are stored
  KvElem q_elem = KvElem::kF32;                         // how q and the result are stored
};

// q [B,H,Sq,D], k [B,Hkv,Sk,D] and v [B,Hkv,Sk,Dv] as s.q_elem, s.k_elem and s.v_elem say ->
// out [B,H,Sq,Dv] as s.q_elem, all contiguous. 16-bit q, K and V are widened to f32 as they are
// read (a tile's q rows once), so the result is the f32 result for the widened values, rounded
// once to q's type when that is 16-bit. Rows that see no key come out NaN, as
// the decomposition's softmax over all -inf does. Parallel over batch x kv heads x query tiles
// with oneTBB.
void attention(const AttentionShape& s, const void* q, const void* k, const void* v, void* out,
               const NnSimd& simd);

}  // namespace rlx::cpu
