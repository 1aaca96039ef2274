// The int8 GEMM's dequantizing epilogue in AVX-512, shared by the kernels whose translation
// units are built with AVX-512 (int8_gemm_avx512.cpp, int8_gemm_amx.cpp); include it from no
// other file, as its body needs those flags.
#pragma once
#include <immintrin.h>

#include "int8_gemm.h"

namespace rlx::cpu::detail {
namespace {

// What the epilogue needs of panel p's 16 columns, loaded once per tile. For rows of one scale
// and zero point (Int8Rows::uniform) their products with the columns' sums and scales are made
// here too, so a row costs a subtraction, a conversion and an FMA.
struct Int8Cols {
  __m512i colsum;
  __m512 scale, bias;
  __mmask16 mask;  // the columns < N
  bool uniform = false;
  __m512i comp;  // uniform: zero * colsum
  __m512 s;      // uniform: scale * the rows' scale
};

inline Int8Cols int8_cols(const PackedInt8W& w, int64_t p, const Int8Rows& x) {
  const int64_t n0 = p * 16, left = w.n - n0;
  Int8Cols c{_mm512_loadu_si512(w.colsum.data() + n0), _mm512_loadu_ps(w.scale.data() + n0),
             _mm512_loadu_ps(w.bias.data() + n0),
             left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1)};
  c.uniform = x.uniform;
  c.comp = _mm512_mullo_epi32(_mm512_set1_epi32(x.uniform_zero), c.colsum);
  c.s = _mm512_mul_ps(c.scale, _mm512_set1_ps(x.uniform_scale));
  return c;
}

// acc: the i32 sums of row m against the panel of `c`. Writes out[0, 16), columns past N left
// alone. The same operations either way, so the same bytes.
inline void int8_store16_avx512(const Int8Cols& c, const Int8Rows& x, int64_t m, __m512i acc,
                                float* out) {
  const __m512i comp =
      c.uniform ? c.comp : _mm512_mullo_epi32(_mm512_set1_epi32(x.zero[m]), c.colsum);
  // The masked form: the plain one's undefined source operand trips GCC 12's warnings.
  const __m512 v =
      _mm512_mask_cvtepi32_ps(_mm512_setzero_ps(), __mmask16(0xFFFF), _mm512_sub_epi32(acc, comp));
  const __m512 s = c.uniform ? c.s : _mm512_mul_ps(c.scale, _mm512_set1_ps(x.scale[m]));
  _mm512_mask_storeu_ps(out, c.mask, _mm512_fmadd_ps(v, s, c.bias));
}

}  // namespace
}  // namespace rlx::cpu::detail
