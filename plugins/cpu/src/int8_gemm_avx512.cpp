// The AVX-512 VNNI int8 kernel (int8_gemm.h): register tiles of up to 8 rows x 32 columns held
// as i32 in 16 zmm accumulators; each step broadcasts four u8 activations of a row and meets
// two 64-byte weight groups with vpdpbusd (64 u8 x s8 products into 16 i32 lanes). The
// dequantizing epilogue (compensation for the zero point, the two scales) runs on the tile
// while it is in registers.
//
// GCC 12 reports -W(maybe-)uninitialized inside immintrin.h for the intrinsics whose builtins take
// an undefined pass-through operand (min, max, roundscale, the narrowing converts), a false
// positive at the inlined call: silenced for this file, before the header, where it applies.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "int8_gemm.h"
#include "int8_gemm_simd.h"

namespace rlx::cpu::detail {

namespace {

// acc + dot4(a u8, b s8) per i32 lane, as vpdpbusd in place. Through the intrinsic GCC 12 copies
// each accumulator into a fresh register and back on every step of the loop; with the tied asm
// operand taken by reference it kept the accumulators on the stack (a load and a store around
// every vpdpbusd: 30-35% of the VNNI peak on a Zen 4). By value in and out, all sixteen stay in
// registers and the loop is the loads, broadcasts and vpdpbusd alone.
inline __m512i dpbusd(__m512i acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}

// Rows [m, m + MR) x panels [p, p + NP) into yt (the tile's row m, column 16 p), row stride ldy.
template <int MR, int NP>
void tile(const PackedInt8W& w, const Int8Rows& x, int64_t m, int64_t p, float* yt, int64_t ldy) {
  __m512i acc[MR][NP];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NP; ++j) acc[r][j] = _mm512_setzero_si512();
  const int8_t* b[NP];
  for (int j = 0; j < NP; ++j) b[j] = w.panel(p + j);
  const uint8_t* a = x.q + m * x.ld;
  const int64_t groups = w.kp / 4;
  // The tile's output lines, fetched for writing while the sums run: a large result (6-25 MB
  // at M = 4096) is in no cache, and the epilogue's stores missing there cost ~15% of the time.
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NP; ++j) __builtin_prefetch(yt + r * ldy + j * 16, 1, 3);
  for (int64_t g = 0; g < groups; ++g) {
    __m512i bv[NP];
#pragma GCC unroll 2
    for (int j = 0; j < NP; ++j) bv[j] = _mm512_loadu_si512(b[j] + g * 64);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * x.ld + g * 4, 4);
      const __m512i av = _mm512_set1_epi32(four);
#pragma GCC unroll 2
      for (int j = 0; j < NP; ++j) acc[r][j] = dpbusd(acc[r][j], av, bv[j]);
    }
  }
  for (int j = 0; j < NP; ++j) {
    const Int8Cols cols = int8_cols(w, p + j, x);
    for (int r = 0; r < MR; ++r)
      int8_store16_avx512(cols, x, m + r, acc[r][j], yt + r * ldy + j * 16);
  }
}

template <int NP>
void rows_left(const PackedInt8W& w, const Int8Rows& x, int64_t m, int64_t rows, int64_t p,
               float* y, int64_t ldy) {
  switch (rows) {
    case 1: return tile<1, NP>(w, x, m, p, y, ldy);
    case 2: return tile<2, NP>(w, x, m, p, y, ldy);
    case 3: return tile<3, NP>(w, x, m, p, y, ldy);
    case 4: return tile<4, NP>(w, x, m, p, y, ldy);
    case 5: return tile<5, NP>(w, x, m, p, y, ldy);
    case 6: return tile<6, NP>(w, x, m, p, y, ldy);
    case 7: return tile<7, NP>(w, x, m, p, y, ldy);
    default: return tile<8, NP>(w, x, m, p, y, ldy);
  }
}

}  // namespace

void int8_block_avx512vnni(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1,
                           int64_t p0, int64_t p1, float* y, int64_t ldy) {
  for (int64_t p = p0; p < p1; p += 2) {
    const bool pair = p + 1 < p1;
    for (int64_t m = m0; m < m1; m += 8) {
      const int64_t rows = std::min<int64_t>(8, m1 - m);
      float* yt = y + (m - m0) * ldy + (p - p0) * 16;
      if (pair)
        rows_left<2>(w, x, m, rows, p, yt, ldy);
      else
        rows_left<1>(w, x, m, rows, p, yt, ldy);
    }
  }
}

}  // namespace rlx::cpu::detail

namespace rlx::cpu::detail {

// quantize_rows_u8 with 16 lanes, giving the bytes of the scalar rule (rlx/core/quantize.h):
// round(x / s) half to even. A vector division takes as long as the rest of the row's work
// (vdivps, 0.55 cycles an element), so the quotient is taken as x * (1 / s) instead, which is
// within 2^-22 |x / s| of the exact quotient (two roundings), and the division is done only for
// a vector with a lane whose product lies within 2^-21 of its magnitude from a half-integer:
// elsewhere the exact quotient, and its f32 rounding, lie on the same side of every tie as the
// product, so both round to the same integer. Such lanes are rare (about 16 lanes in 2^16 for
// MiniLM's activations), and a scale whose inverse is not a normal number divides throughout.
void quantize_row_u8_avx512(const float* x, int64_t k, float scale, uint8_t zero, uint8_t* q) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(static_cast<float>(zero));
  const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
  const float inverse = 1.0f / scale;
  const bool by_product = std::isnormal(scale) && std::isnormal(inverse);
  const __m512 r = _mm512_set1_ps(inverse), half = _mm512_set1_ps(0.5f);
  const __m512 margin = _mm512_set1_ps(0x1p-21f);
  const __m512i abs_bits = _mm512_set1_epi32(0x7FFFFFFF);
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  auto abs_ps = [&](__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), abs_bits));
  };
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512 xv = _mm512_loadu_ps(x + i);
    __m512 v;
    if (by_product) {
      const __m512 t = _mm512_mul_ps(xv, r);
      v = _mm512_roundscale_ps(t, kNearest);
      // |distance to the nearest integer - 1/2| <= |t| 2^-21: a tie may be near.
      const __m512 off = abs_ps(_mm512_sub_ps(abs_ps(_mm512_sub_ps(t, v)), half));
      if (_mm512_cmp_ps_mask(off, _mm512_mul_ps(abs_ps(t), margin), _CMP_LE_OQ))
        v = _mm512_roundscale_ps(_mm512_div_ps(xv, s), kNearest);
    } else {
      v = _mm512_roundscale_ps(_mm512_div_ps(xv, s), kNearest);
    }
    v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, z), lo), hi);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i),
                     _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
  }
  for (; i < k; ++i) {
    const float v = std::nearbyint(x[i] / scale) + static_cast<float>(zero);
    q[i] = static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f));
  }
}

void scale_row_avx512(const float* x, const float* s, int64_t k, float* out) {
  int64_t i = 0;
  for (; i + 16 <= k; i += 16)
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(s + i)));
  for (; i < k; ++i) out[i] = x[i] * s[i];
}

void row_range_avx512(const float* x, int64_t k, float* lo, float* hi) {
  // Four chains of min and max: one chain waited on each vmaxps's latency (4 cycles a vector).
  __m512 mn[4], mx[4];
  for (int c = 0; c < 4; ++c) mn[c] = mx[c] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= k; i += 64)
    for (int c = 0; c < 4; ++c) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * c);
      mn[c] = _mm512_min_ps(mn[c], v), mx[c] = _mm512_max_ps(mx[c], v);
    }
  for (; i + 16 <= k; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    mn[0] = _mm512_min_ps(mn[0], v), mx[0] = _mm512_max_ps(mx[0], v);
  }
  const __m512 n = _mm512_min_ps(_mm512_min_ps(mn[0], mn[1]), _mm512_min_ps(mn[2], mn[3]));
  const __m512 m = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
  float l = _mm512_reduce_min_ps(n), h = _mm512_reduce_max_ps(m);
  for (; i < k; ++i) l = std::min(l, x[i]), h = std::max(h, x[i]);
  *lo = l, *hi = h;
}

}  // namespace rlx::cpu::detail
