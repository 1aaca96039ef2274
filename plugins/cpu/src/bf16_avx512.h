// f32 -> bf16 on 16 lanes as rlx::f32_to_bf16 does it (nearest even, a NaN kept quiet), and back,
// for the translation units built with AVX-512 (gemm_bf16.cpp, nn_attention_bf16.cpp): include
// it from no other file, as its body needs those flags.
#pragma once
#include <immintrin.h>

namespace rlx::cpu {
namespace {

// The shifts and the narrowing are the masked forms with a zero source: the plain ones' undefined
// source operand trips GCC 12's -Wmaybe-uninitialized.
inline __m512i shift_right_16(__m512i x) {
  return _mm512_maskz_srli_epi32(__mmask16(0xFFFF), x, 16);
}

inline __m256i bf16_from_f32(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i rounded =
      shift_right_16(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)),
                                      _mm512_and_si512(shift_right_16(x), _mm512_set1_epi32(1))));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i quiet = _mm512_or_si512(shift_right_16(x), _mm512_set1_epi32(0x40));
  return _mm512_maskz_cvtepi32_epi16(__mmask16(0xFFFF), _mm512_mask_mov_epi32(rounded, nan, quiet));
}

// 16 bf16 values widened to f32 (exactly: the bits shifted into the top half).
inline __m512 bf16_widen(__m256i h) {
  const __mmask16 all = 0xFFFF;
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, h), 16));
}

}  // namespace
}  // namespace rlx::cpu
