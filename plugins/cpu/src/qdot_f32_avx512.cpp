// The AVX-512 f32 block products (DequantMatMul's default arithmetic, activations as they are)
// and row decoding: each weight block is decoded in registers to unsigned bytes plus a scale and
// a minimum per 16 elements, widened to f32 as w = fma(u, scale, min) (the exact value
// quant::dequantize gives: every format's scale times its integer is exact in f32, so both round
// once), and multiplied into up to kRowTile rows of x, or stored (prefill's weight tiles).
#include "qdot.h"
#if defined(__x86_64__)
#include "qdot_avx512_blocks.h"

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_ps) as uninitialised once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace rlx::cpu::detail {
namespace {

using namespace avx512;
using quant::QType;

constexpr int kRowTile = 4;

// Each format hands its block to `fn` 32 elements at a time, as unsigned bytes u in a register
// with element i of the chunk = scale_lo * u[i] + min_lo for i < 16, scale_hi * u[i] + min_hi
// above: fn(u, offset in the block, scale_lo, min_lo, scale_hi, min_hi).
template <class F>
struct Block32 {
  static constexpr int kElems = 32, kBytes = F::kBytes;
  template <class Fn>
  static void visit(const uint8_t* b, Fn&& fn) {
    const float s = F::scale(b), c = F::coeff(b);
    fn(F::unpack(b), 0, s, c, s, c);
  }
};

template <bool kFifth>
struct Q45K {
  static constexpr int kElems = 256, kBytes = kFifth ? 176 : 144;
  template <class Fn>
  static void visit(const uint8_t* b, Fn&& fn) {
    const float dd = f16(b), dmin = f16(b + 2);
    int sc[8], mn[8];
    scales_mins_k4(b + 4, sc, mn);
    unpack_q45k<kFifth>(b, [&](int j, __m256i lo, __m256i hi) {
      const float s0 = dd * static_cast<float>(sc[2 * j]),
                  m0 = -dmin * static_cast<float>(mn[2 * j]);
      const float s1 = dd * static_cast<float>(sc[2 * j + 1]),
                  m1 = -dmin * static_cast<float>(mn[2 * j + 1]);
      fn(lo, 64 * j, s0, m0, s0, m0);
      fn(hi, 64 * j + 32, s1, m1, s1, m1);
    });
  }
};

struct Q6K {
  static constexpr int kElems = 256, kBytes = 210;
  template <class Fn>
  static void visit(const uint8_t* b, Fn&& fn) {
    const float dd = f16(b + 208);
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    unpack_q6k(b, [&](int h, int g, __m256i u) {
      const float s0 = dd * static_cast<float>(sc[8 * h + 2 * g]);
      const float s1 = dd * static_cast<float>(sc[8 * h + 2 * g + 1]);
      fn(u, 128 * h + 32 * g, s0, -32.0f * s0, s1, -32.0f * s1);
    });
  }
};

// The two halves of a chunk widened to f32 weights.
inline __m512 widen_lo(__m256i u, float s, float m) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(u))),
                         _mm512_set1_ps(s), _mm512_set1_ps(m));
}
inline __m512 widen_hi(__m256i u, float s, float m) {
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(u, 1))),
                         _mm512_set1_ps(s), _mm512_set1_ps(m));
}

template <class B, int MT>
void rows(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const float* const* x,
          int64_t nb, float* const* y) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    // Two sums per row of x: the halves of a chunk do not wait on each other's FMA.
    __m512 acc[MT], acc2[MT];
    for (int m = 0; m < MT; ++m) acc[m] = acc2[m] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i, b += B::kBytes) {
      prefetch_block<B::kBytes>(b);
      const int64_t base = i * B::kElems;
      B::visit(b, [&](__m256i u, int off, float s0, float m0, float s1, float m1) {
        const __m512 w0 = widen_lo(u, s0, m0), w1 = widen_hi(u, s1, m1);
        for (int m = 0; m < MT; ++m) {
          acc[m] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[m] + base + off), acc[m]);
          acc2[m] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[m] + base + off + 16), acc2[m]);
        }
      });
    }
    for (int m = 0; m < MT; ++m) y[m][n] = _mm512_reduce_add_ps(_mm512_add_ps(acc[m], acc2[m]));
  }
}

// Q8_0 needs no offset: its signed bytes widen directly, and the block's scale is applied once
// to the block's sum instead of to every weight (fewer instructions on the largest decode
// operand, the tied output head of the GGUF models that keep it in Q8_0).
template <int MT>
void rows_q8_0(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const float* const* x,
               int64_t nb, float* const* y) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i, b += 34) {
      prefetch_block<34>(b);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
      const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)));
      const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
      const __m512 d = _mm512_set1_ps(f16(b));
      for (int m = 0; m < MT; ++m) {
        const float* xs = x[m] + 32 * i;
        const __m512 t =
            _mm512_fmadd_ps(hi, _mm512_loadu_ps(xs + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(xs)));
        acc[m] = _mm512_fmadd_ps(t, d, acc[m]);
      }
    }
    for (int m = 0; m < MT; ++m) y[m][n] = _mm512_reduce_add_ps(acc[m]);
  }
}

template <class B>
void decode(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, int64_t nb, float* out,
            int64_t ldo) {
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    float* o = out + (n - n0) * ldo;
    for (int64_t i = 0; i < nb; ++i, b += B::kBytes, o += B::kElems)
      B::visit(b, [&](__m256i u, int off, float s0, float m0, float s1, float m1) {
        _mm512_storeu_ps(o + off, widen_lo(u, s0, m0));
        _mm512_storeu_ps(o + off + 16, widen_hi(u, s1, m1));
      });
  }
}

template <int MT>
void dispatch(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
              const float* const* x, int64_t k, float* const* y) {
  switch (t) {
    case QType::kQ4_0:
      return rows<Block32<Q4_0>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ4_1:
      return rows<Block32<Q4_1>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ5_0:
      return rows<Block32<Q5_0>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ5_1:
      return rows<Block32<Q5_1>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ8_0:
      return rows_q8_0<MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kIQ4_NL:
      return rows<Block32<IQ4_NL>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ4_K:
      return rows<Q45K<false>, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    case QType::kQ5_K:
      return rows<Q45K<true>, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    case QType::kQ6_K:
      return rows<Q6K, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    default:
      return;  // callers check qdot_supports first
  }
}

}  // namespace

void qdot_decode_rows_avx512(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                             int64_t k, float* out, int64_t ldo) {
  switch (t) {
    case QType::kQ4_0:
      return decode<Block32<Q4_0>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kQ4_1:
      return decode<Block32<Q4_1>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kQ5_0:
      return decode<Block32<Q5_0>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kQ5_1:
      return decode<Block32<Q5_1>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kQ8_0:
      return decode<Block32<Q8_0>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kIQ4_NL:
      return decode<Block32<IQ4_NL>>(w, row_bytes, n0, n1, k / 32, out, ldo);
    case QType::kQ4_K:
      return decode<Q45K<false>>(w, row_bytes, n0, n1, k / 256, out, ldo);
    case QType::kQ5_K:
      return decode<Q45K<true>>(w, row_bytes, n0, n1, k / 256, out, ldo);
    case QType::kQ6_K:
      return decode<Q6K>(w, row_bytes, n0, n1, k / 256, out, ldo);
    default:
      return;  // callers check qdot_supports first
  }
}

void qdot_rows_f32_avx512(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                          const float* x, int64_t ldx, int64_t M, int64_t k, float* y,
                          int64_t ldy) {
  for (int64_t m0 = 0; m0 < M; m0 += kRowTile) {
    const float* xs[kRowTile];
    float* out[kRowTile];
    const int mt = static_cast<int>(M - m0 < kRowTile ? M - m0 : kRowTile);
    for (int m = 0; m < mt; ++m) xs[m] = x + (m0 + m) * ldx, out[m] = y + (m0 + m) * ldy;
    switch (mt) {
      case 1:
        dispatch<1>(t, w, row_bytes, n0, n1, xs, k, out);
        break;
      case 2:
        dispatch<2>(t, w, row_bytes, n0, n1, xs, k, out);
        break;
      case 3:
        dispatch<3>(t, w, row_bytes, n0, n1, xs, k, out);
        break;
      default:
        dispatch<4>(t, w, row_bytes, n0, n1, xs, k, out);
        break;
    }
  }
}

}  // namespace rlx::cpu::detail
#endif  // __x86_64__
