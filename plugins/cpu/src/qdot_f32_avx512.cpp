// The AVX-512 f32 block products (DequantMatMul's default arithmetic, activations as they are):
// each weight block is decoded in registers to unsigned bytes plus a scale and a minimum per 16
// elements, widened to f32 as w = fma(u, scale, min) (the exact value quant::dequantize gives:
// every format's scale times its integer is exact in f32, so both round once), and multiplied
// into up to kRowTile rows of x. Nothing is written to memory but one block's bytes on the stack.
#include "qdot.h"
#if defined(__x86_64__)
#include "qdot_avx512_blocks.h"

namespace rlx::cpu::detail {
namespace {

using namespace avx512;
using quant::QType;

constexpr int kRowTile = 4;

// One decoded block: element i is scale[i / 16] * u[i] + min[i / 16].
struct Decoded {
  alignas(64) uint8_t u[256];
  float scale[16], min[16];
};

template <class F>
struct Block32 {
  static constexpr int kElems = 32, kBytes = F::kBytes;
  static void decode(const uint8_t* b, Decoded& d) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(d.u), F::unpack(b));
    d.scale[0] = d.scale[1] = F::scale(b);
    d.min[0] = d.min[1] = F::coeff(b);
  }
};

template <bool kFifth>
struct Q45K {
  static constexpr int kElems = 256, kBytes = kFifth ? 176 : 144;
  static void decode(const uint8_t* b, Decoded& d) {
    const float dd = f16(b), dmin = f16(b + 2);
    int sc[8], mn[8];
    scales_mins_k4(b + 4, sc, mn);
    for (int s = 0; s < 8; ++s) {
      d.scale[2 * s] = d.scale[2 * s + 1] = dd * static_cast<float>(sc[s]);
      d.min[2 * s] = d.min[2 * s + 1] = -dmin * static_cast<float>(mn[s]);
    }
    const uint8_t* qs = b + (kFifth ? 48 : 16);
    const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
    const __m256i qh = kFifth ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16))
                              : _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kFifth) {
        lo = _mm256_mask_add_epi8(lo, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(1 << (2 * j))),
                                  lo, sixteen);
        hi = _mm256_mask_add_epi8(
            hi, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(2 << (2 * j)))), hi,
            sixteen);
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(d.u + 64 * j), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(d.u + 64 * j + 32), hi);
    }
  }
};

struct Q6K {
  static constexpr int kElems = 256, kBytes = 210;
  static void decode(const uint8_t* b, Decoded& d) {
    const float dd = f16(b + 208);
    const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int s = 0; s < 16; ++s) {
      d.scale[s] = dd * static_cast<float>(sc[s]);
      d.min[s] = -32.0f * d.scale[s];
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b + 64 * h;
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      auto put = [&](int g, __m256i v) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(d.u + 128 * h + 32 * g), v);
      };
      put(0, _mm256_or_si256(_mm256_and_si256(l0, low4),
                             _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)));
      put(1, _mm256_or_si256(_mm256_and_si256(l1, low4),
                             _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)));
      put(2, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                             _mm256_and_si256(qh, bits45)));
      put(3, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)));
    }
  }
};

inline float hsum512(__m512 v) { return _mm512_reduce_add_ps(v); }

template <class B, int MT>
void rows(const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1, const float* const* x,
          int64_t nb, float* const* y) {
  Decoded d;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* b = w + n * row_bytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i, b += B::kBytes) {
      B::decode(b, d);
      const int64_t base = i * B::kElems;
      for (int s = 0; s < B::kElems / 16; ++s) {
        const __m128i u8 = _mm_load_si128(reinterpret_cast<const __m128i*>(d.u + 16 * s));
        const __m512 wv = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(u8)),
                                          _mm512_set1_ps(d.scale[s]), _mm512_set1_ps(d.min[s]));
        for (int m = 0; m < MT; ++m)
          acc[m] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[m] + base + 16 * s), acc[m]);
      }
    }
    for (int m = 0; m < MT; ++m) y[m][n] = hsum512(acc[m]);
  }
}

template <int MT>
void dispatch(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
              const float* const* x, int64_t k, float* const* y) {
  switch (t) {
    case QType::kQ4_0: return rows<Block32<Q4_0>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ4_1: return rows<Block32<Q4_1>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ5_0: return rows<Block32<Q5_0>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ5_1: return rows<Block32<Q5_1>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ8_0: return rows<Block32<Q8_0>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kIQ4_NL: return rows<Block32<IQ4_NL>, MT>(w, row_bytes, n0, n1, x, k / 32, y);
    case QType::kQ4_K: return rows<Q45K<false>, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    case QType::kQ5_K: return rows<Q45K<true>, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    case QType::kQ6_K: return rows<Q6K, MT>(w, row_bytes, n0, n1, x, k / 256, y);
    default: return;  // callers check qdot_supports first
  }
}

}  // namespace

void qdot_rows_f32_avx512(QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                          const float* x, int64_t ldx, int64_t M, int64_t k, float* y,
                          int64_t ldy) {
  for (int64_t m0 = 0; m0 < M; m0 += kRowTile) {
    const float* xs[kRowTile];
    float* out[kRowTile];
    const int mt = static_cast<int>(M - m0 < kRowTile ? M - m0 : kRowTile);
    for (int m = 0; m < mt; ++m) xs[m] = x + (m0 + m) * ldx, out[m] = y + (m0 + m) * ldy;
    switch (mt) {
      case 1: dispatch<1>(t, w, row_bytes, n0, n1, xs, k, out); break;
      case 2: dispatch<2>(t, w, row_bytes, n0, n1, xs, k, out); break;
      case 3: dispatch<3>(t, w, row_bytes, n0, n1, xs, k, out); break;
      default: dispatch<4>(t, w, row_bytes, n0, n1, xs, k, out); break;
    }
  }
}

}  // namespace rlx::cpu::detail
#endif  // __x86_64__
