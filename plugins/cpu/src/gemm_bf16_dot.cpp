// The bf16 GEMM's block on AVX512-BF16 (gemm_bf16_blocks.h). A packed panel's row g holds the bf16
// pair k = 2g, 2g + 1 of its 16 columns, so one VDPBF16PS of that row against a row of A's pair
// (A[m, 2g], A[m, 2g + 1] broadcast to every lane) adds both products to row m's 16 sums. Rows go
// eight at a time against both panels: 16 accumulators, enough independent sums to cover the
// instruction's latency, and each panel row loaded once per eight rows.
#include <immintrin.h>

#include <cstring>

#include "gemm_bf16_blocks.h"
#include "row_groups.h"

namespace rlx::cpu {

namespace {

template <int R, int NT>
void rows_block(const uint16_t* a, int64_t lda, int64_t K, const uint16_t* b0, const uint16_t* b1,
                float* t) {
  __m512 acc[R][NT];
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < K / 2; ++g) {
    __m512bh w[NT];
    w[0] = (__m512bh)_mm512_loadu_si512(b0 + g * 32);
    if constexpr (NT > 1) w[1] = (__m512bh)_mm512_loadu_si512(b1 + g * 32);
    for (int i = 0; i < R; ++i) {
      int32_t pair;  // the two bf16 of A[i, 2g .. 2g + 1] as one 32-bit lane
      std::memcpy(&pair, a + i * lda + 2 * g, sizeof(pair));
      const __m512bh x = (__m512bh)_mm512_set1_epi32(pair);
      for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], x, w[j]);
    }
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < NT; ++j) _mm512_storeu_ps(t + i * 32 + j * 16, acc[i][j]);
}

}  // namespace

void avx512_bf16_block(const uint16_t* a, int64_t lda, int rows_asked, const PackedBf16B& b,
                       int64_t p, bool two, float* t) {
  const uint16_t* b0 = b.panel(p);
  const uint16_t* b1 = two ? b.panel(p + 1) : b0;
  by_eight(rows_asked, [&](auto r, int64_t i) {
    if (two)
      rows_block<decltype(r)::value, 2>(a + i * lda, lda, b.k, b0, b1, t + i * 32);
    else
      rows_block<decltype(r)::value, 1>(a + i * lda, lda, b.k, b0, b1, t + i * 32);
  });
}

}  // namespace rlx::cpu
