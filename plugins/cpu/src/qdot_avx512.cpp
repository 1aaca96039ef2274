// The AVX-512 VNNI block products (compiled with -mavx512vnni and friends; called only when the
// CPU has them, see qdot_isa_supported). Every weight format is brought to unsigned bytes in
// registers and multiplied with vpdpbusd (u8 x s8, four products summed per i32 lane); what the
// unsigned form adds (an offset, or a format's minimum) comes off through the activation block's
// sum. A weight block is decoded once and used for up to kRowTile rows of activations.
#include "qdot.h"
#if defined(__x86_64__)
#include "qdot_avx512_blocks.h"

namespace rlx::cpu::detail {
namespace {

using namespace avx512;
using quant::QType;

constexpr int kRowTile = 4;

template <class F, int MT>
void rows32(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const QAct32* const* x,
            int64_t nb, float* const* y) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    __m256 acc[MT];
    float corr[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm256_setzero_ps(), corr[m] = 0;
    for (int64_t i = 0; i < nb; ++i, b += F::kBytes) {
      prefetch_block<F::kBytes>(b);
      const __m256i u = F::unpack(b);
      const float s = F::scale(b), c = F::coeff(b);
      for (int m = 0; m < MT; ++m) {
        const QAct32& a = x[m][i];
        acc[m] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_u8s8(u, a.q)), _mm256_set1_ps(s * a.d), acc[m]);
        corr[m] += c * a.dsum;
      }
    }
    for (int m = 0; m < MT; ++m) y[m][n] = hsum(acc[m]) + corr[m];
  }
}

// ---- 256-element K formats against Q8_K-style activations ------------------------------------

// Q4_K (kFifth = false) and Q5_K: w = d * sc[s] * u - dmin * mn[s] over eight subblocks of 32;
// in each 64 elements the low nibbles are one subblock, the high nibbles the next.
template <bool kFifth, int MT>
void rows_q45k(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const QAct256* const* x,
               int64_t nb, float* const* y) {
  constexpr int kBytes = kFifth ? 176 : 144;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    __m256 acc[MT];
    float corr[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm256_setzero_ps(), corr[m] = 0;
    for (int64_t i = 0; i < nb; ++i, b += kBytes) {
      prefetch_block<kBytes>(b);
      const float d = f16(b), dmin = f16(b + 2);
      int sc[8], mn[8];
      scales_mins_k4(b + 4, sc, mn);
      __m256i isum[MT];
      for (int m = 0; m < MT; ++m) isum[m] = _mm256_setzero_si256();
      unpack_q45k<kFifth>(b, [&](int j, __m256i lo, __m256i hi) {
        const __m256i s0 = _mm256_set1_epi32(sc[2 * j]), s1 = _mm256_set1_epi32(sc[2 * j + 1]);
        for (int m = 0; m < MT; ++m) {
          const int8_t* xq = x[m][i].q + 64 * j;
          isum[m] = _mm256_add_epi32(isum[m], _mm256_mullo_epi32(dot_u8s8(lo, xq), s0));
          isum[m] = _mm256_add_epi32(isum[m], _mm256_mullo_epi32(dot_u8s8(hi, xq + 32), s1));
        }
      });
      for (int m = 0; m < MT; ++m) {
        const QAct256& a = x[m][i];
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[m]), _mm256_set1_ps(d * a.d), acc[m]);
        int msum = 0;
        for (int s = 0; s < 8; ++s) msum += mn[s] * (a.bsums[2 * s] + a.bsums[2 * s + 1]);
        corr[m] -= dmin * a.d * static_cast<float>(msum);
      }
    }
    for (int m = 0; m < MT; ++m) y[m][n] = hsum(acc[m]) + corr[m];
  }
}

// Q6_K: w = d * sc[s] * (u - 32), u six bits (four from ql, two from qh), sixteen subblocks of
// 16 with signed 8-bit scales. Each 128 elements: 64 bytes of ql, 32 of qh, 8 scales.
template <int MT>
void rows_q6k(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const QAct256* const* x,
              int64_t nb, float* const* y) {
  // Lanes 0-3 of a 32-byte product cover elements 0-15 (one subblock), lanes 4-7 the next.
  const __m256i pick[4] = {
      _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1), _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3),
      _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5), _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7)};
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    __m256 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i, b += 210) {
      prefetch_block<210>(b);
      const float d = f16(b + 208);
      const __m128i sc16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
      __m256i isum[MT];
      for (int m = 0; m < MT; ++m) isum[m] = _mm256_setzero_si256();
      const __m256i sc_lo = _mm256_cvtepi8_epi32(sc16),
                    sc_hi = _mm256_cvtepi8_epi32(_mm_srli_si128(sc16, 8));
      unpack_q6k(b, [&](int h, int g, __m256i u) {
        const __m256i s = _mm256_permutevar8x32_epi32(h ? sc_hi : sc_lo, pick[g]);
        for (int m = 0; m < MT; ++m)
          isum[m] = _mm256_add_epi32(
              isum[m], _mm256_mullo_epi32(dot_u8s8(u, x[m][i].q + 128 * h + 32 * g), s));
      });
      // The offset: 32 * sum_s sc[s] * bsums[s], pairwise in eight lanes.
      const __m256i sc_w = _mm256_cvtepi8_epi16(sc16);
      for (int m = 0; m < MT; ++m) {
        const QAct256& a = x[m][i];
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bsums));
        const __m256i off = _mm256_slli_epi32(_mm256_madd_epi16(sc_w, bs), 5);
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(isum[m], off)),
                                 _mm256_set1_ps(d * a.d), acc[m]);
      }
    }
    for (int m = 0; m < MT; ++m) y[m][n] = hsum(acc[m]);
  }
}

template <int MT>
void dispatch(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
              const void* const* x, int64_t nb, float* const* y) {
  auto x32 = reinterpret_cast<const QAct32* const*>(x);
  auto x256 = reinterpret_cast<const QAct256* const*>(x);
  switch (t) {
    case QType::kQ4_0:
      return rows32<Q4_0, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kQ4_1:
      return rows32<Q4_1, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kQ5_0:
      return rows32<Q5_0, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kQ5_1:
      return rows32<Q5_1, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kQ8_0:
      return rows32<Q8_0, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kIQ4_NL:
      return rows32<IQ4_NL, MT>(w, row_bytes, n0, n1, x32, nb, y);
    case QType::kQ4_K:
      return rows_q45k<false, MT>(w, row_bytes, n0, n1, x256, nb, y);
    case QType::kQ5_K:
      return rows_q45k<true, MT>(w, row_bytes, n0, n1, x256, nb, y);
    case QType::kQ6_K:
      return rows_q6k<MT>(w, row_bytes, n0, n1, x256, nb, y);
    default:
      return;  // callers check qdot_supports first
  }
}

}  // namespace

void qdot_rows_avx512vnni(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                          const void* xq, int64_t xq_stride, int64_t M, int64_t k, float* y,
                          int64_t ldy) {
  const int64_t nb = k / quant::info(t).block_size;
  for (int64_t m0 = 0; m0 < M; m0 += kRowTile) {
    const void* x[kRowTile];
    float* out[kRowTile];
    const int mt = static_cast<int>(M - m0 < kRowTile ? M - m0 : kRowTile);
    for (int m = 0; m < mt; ++m) {
      x[m] = static_cast<const uint8_t*>(xq) + (m0 + m) * xq_stride;
      out[m] = y + (m0 + m) * ldy;
    }
    switch (mt) {
      case 1:
        dispatch<1>(t, w, row_bytes, n0, n1, x, nb, out);
        break;
      case 2:
        dispatch<2>(t, w, row_bytes, n0, n1, x, nb, out);
        break;
      case 3:
        dispatch<3>(t, w, row_bytes, n0, n1, x, nb, out);
        break;
      default:
        dispatch<4>(t, w, row_bytes, n0, n1, x, nb, out);
        break;
    }
  }
}

}  // namespace rlx::cpu::detail
#endif  // __x86_64__
