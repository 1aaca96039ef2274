// The AVX2 int8 kernel (int8_gemm.h) for CPUs without VNNI: the u8 activations and s8 weights
// are widened to i16 and multiplied with vpmaddwd, whose pairwise i32 sums are exact (unlike
// vpmaddubsw's saturating i16 ones). It reads the VNNI layout: 16 bytes of a 64-byte group are
// 4 columns x 4 weights, so each madd leaves two partial sums per column, added at the end.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "int8_gemm.h"

namespace rlx::cpu::detail {

namespace {

// Rows [m, m + MR) of panel p into yt (the tile's row m, column 16 p) with row stride ldy.
template <int MR>
void tile(const PackedInt8W& w, const Int8Rows& x, int64_t m, int64_t p, float* yt, int64_t ldy) {
  __m256i acc[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm256_setzero_si256();
  const int8_t* b = w.panel(p);
  const uint8_t* a = x.q + m * x.ld;
  for (int64_t g = 0; g < w.kp / 4; ++g) {
    __m256i bv[4];
    for (int c = 0; c < 4; ++c)
      bv[c] = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + g * 64 + c * 16)));
    for (int r = 0; r < MR; ++r) {
      int32_t four;
      std::memcpy(&four, a + r * x.ld + g * 4, 4);
      // Four u8 as four i16, repeated for the four columns of a chunk.
      const __m128i wide = _mm_cvtepu8_epi16(_mm_cvtsi32_si128(four));
      const __m256i av = _mm256_broadcastq_epi64(wide);
      for (int c = 0; c < 4; ++c)
        acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(av, bv[c]));
    }
  }
  for (int r = 0; r < MR; ++r) {
    alignas(32) int32_t part[32];
    for (int c = 0; c < 4; ++c)
      _mm256_store_si256(reinterpret_cast<__m256i*>(part + c * 8), acc[r][c]);
    int32_t sums[16];
    for (int j = 0; j < 16; ++j) sums[j] = part[2 * j] + part[2 * j + 1];
    int8_store16(w, x, m + r, p, sums, yt + r * ldy);
  }
}

}  // namespace

void int8_block_avx2(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, float* y, int64_t ldy) {
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t m = m0; m < m1; m += 2) {
      float* yt = y + (m - m0) * ldy + (p - p0) * 16;
      if (m + 1 < m1)
        tile<2>(w, x, m, p, yt, ldy);
      else
        tile<1>(w, x, m, p, yt, ldy);
    }
}

}  // namespace rlx::cpu::detail
