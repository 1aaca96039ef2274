// Fused scaled dot-product attention on the cpu, computing in f32: the native lowering of the HIR
// Attention op (core/src/ops/ops_hir_nn.cpp), computing what its decomposition computes without
// materialising the [B, H, Sq, Sk] scores: per tile of query rows and block of keys,
// S = Q K^T * scale, masked, folded into a running max and sum (online softmax), O += P V.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gemm_bf16.h"
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
  // Element strides of (batch, head, position) for q, k, v and the result; the last dim is
  // contiguous. All zero: the contiguous [B, H, S, D] layout (with_layout fills them in). Other
  // strides read a [B, S, H, D] product output in place instead of a transposed copy.
  struct Strides {
    int64_t b = 0, h = 0, s = 0;
    int64_t at(int64_t bi, int64_t hi, int64_t si) const { return bi * b + hi * h + si * s; }
  };
  Strides q_st, k_st, v_st, o_st;
};

// `s` with the contiguous strides filled in where none were given.
AttentionShape with_layout(AttentionShape s);

// q [B,H,Sq,D], k [B,Hkv,Sk,D] and v [B,Hkv,Sk,Dv] as s.q_elem, s.k_elem and s.v_elem say ->
// out [B,H,Sq,Dv] as s.q_elem, laid out as the strides say. 16-bit q, K and V are widened to f32 as
// they are read (a tile's q rows once), so the result is the f32 result for the widened values,
// rounded once to q's type when that is 16-bit. Rows that see no key come out NaN, as the
// decomposition's softmax over all -inf does. Parallel over batch x kv heads x query tiles with
// oneTBB.
void attention(const AttentionShape& s, const void* q, const void* k, const void* v, void* out,
               const NnSimd& simd);

// The unit attention_bf16 computes this attention on: q, k and v bf16, a head_dim that whole
// tiles cover (a multiple of 32, at most 128) and a v_dim of whole 16-column tiles, on a CPU with
// AMX-BF16 (granted to this process) or AVX512-BF16 (gemm_bf16.h's bf16_unit(); RLX_CPU_AMX_BF16=0
// and RLX_CPU_AVX512_BF16=0 turn them off). kNone: the f32 kernel on widened values.
Bf16Unit attention_bf16_unit(KvElem q, KvElem k, KvElem v, int64_t head_dim, int64_t v_dim);

// Attention with bf16 products (nn_attention_bf16.cpp), what `--precision amp-bf16` asks of
// attention: Q K^T as exact products summed in f32 (TDPBF16PS or VDPBF16PS), scaled, masked and
// put through an online softmax in f32; each block's weights rounded to bf16 and their sum taken
// of the rounded values, so a row's weights still sum to one; P V again as bf16 products summed
// in f32, the result rounded once to bf16. Masks, no-key rows and NaN rows as attention() has
// them. `unit` must be available on this CPU.
void attention_bf16(Bf16Unit unit, const AttentionShape& s, const void* q, const void* k,
                    const void* v, void* out);

// A per-thread scratch buffer shared by the calls on that thread. `busy` while a call uses it: a
// thread waiting in that call's parallel_for may run another model's attention (nested oneTBB
// use), which then takes a buffer of its own instead of resizing this one under its readers.
template <typename T>
struct ThreadScratch {
  std::vector<T> data;
  bool busy = false;
};
// Marks a borrowed buffer free when the call that borrowed it ends (empty when it took its own).
struct ScratchRelease {
  bool* busy = nullptr;
  ScratchRelease() = default;
  ScratchRelease(const ScratchRelease&) = delete;
  ScratchRelease& operator=(const ScratchRelease&) = delete;
  ~ScratchRelease() {
    if (busy) *busy = false;
  }
};

// The thread's buffer grown to n elements, or `own` when a call further up this thread's stack
// holds it; `release` marks it free again when the call ends.
template <typename T>
T* borrow_scratch(ThreadScratch<T>& tls, std::vector<T>& own, std::size_t n,
                  ScratchRelease& release) {
  std::vector<T>& buffer = tls.busy ? own : tls.data;
  if (&buffer != &own) {
    tls.busy = true;
    release.busy = &tls.busy;
  }
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace rlx::cpu
