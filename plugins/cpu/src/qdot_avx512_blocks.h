// Shared by the AVX-512 block kernels (qdot_avx512.cpp: integer products; qdot_f32_avx512.cpp:
// f32 products): each 32-element format brought to 32 unsigned bytes u in a register with
// w = scale * u + coeff, and the K formats' packed scales. Include only from files compiled with
// the AVX-512 VNNI flags (plugins/cpu/CMakeLists.txt).
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace rlx::cpu::detail::avx512 {

// Decode streams the weights from memory once per token, and a block's arithmetic takes long
// enough that the hardware prefetcher alone leaves the loads waiting (measured: the Q8_0 head of
// Gemma 3 read at 11 GB/s against 24 GB/s of plain reads). Asking for the bytes a few KB ahead
// keeps enough misses in flight; 3 KB was the best of 0.5 to 8 KB on an AVX-512 Xeon. Prefetches
// past the end of the weights are harmless: they never fault.
constexpr int kPrefetchAhead = 3072;
template <int kBytes>
inline void prefetch_block(const uint8_t* b) {
  for (int o = 0; o < kBytes; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(b) + kPrefetchAhead + o, _MM_HINT_T0);
}

inline float f16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return _cvtsh_ss(v);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256i dot_u8s8(__m256i u, const int8_t* x) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u,
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
}

// 16 packed bytes -> 32 unsigned nibbles: byte j's low nibble is element j, its high one j + 16.
inline __m256i nibbles(const uint8_t* qs) {
  __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// ---- 32-element formats: w = scale * u + coeff, summed against x = d * q --------------------
// sum_k w x = scale * d * (u . q) + coeff * (d * sum q), so each block gives the integer dot
// times scale and the activation block's dsum times coeff.
struct Q4_0 {
  static constexpr int kBytes = 18;
  static __m256i unpack(const uint8_t* b) { return nibbles(b + 2); }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return -8.0f * f16(b); }
};
struct Q4_1 {
  static constexpr int kBytes = 20;
  static __m256i unpack(const uint8_t* b) { return nibbles(b + 4); }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return f16(b + 2); }
};
// The fifth bits: bit j of the little-endian u32 qh belongs to element j.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  return _mm256_maskz_mov_epi8(h, _mm256_set1_epi8(0x10));
}
struct Q5_0 {
  static constexpr int kBytes = 22;
  static __m256i unpack(const uint8_t* b) {
    return _mm256_or_si256(nibbles(b + 6), fifth_bits(b + 2));
  }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return -16.0f * f16(b); }
};
struct Q5_1 {
  static constexpr int kBytes = 24;
  static __m256i unpack(const uint8_t* b) {
    return _mm256_or_si256(nibbles(b + 8), fifth_bits(b + 4));
  }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return f16(b + 2); }
};
// Signed bytes made unsigned by flipping the top bit (q + 128).
struct Q8_0 {
  static constexpr int kBytes = 34;
  static __m256i unpack(const uint8_t* b) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)),
                            _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return -128.0f * f16(b); }
};
// The non-uniform levels (kIQ4Levels) plus 128, looked up with a byte shuffle.
struct IQ4_NL {
  static constexpr int kBytes = 18;
  static __m256i unpack(const uint8_t* b) {
    const __m256i levels =
        _mm256_setr_epi8(1, 24, 45, 63, 79, 93, 106, static_cast<char>(118), static_cast<char>(129),
                         static_cast<char>(141), static_cast<char>(153), static_cast<char>(166),
                         static_cast<char>(181), static_cast<char>(197), static_cast<char>(217),
                         static_cast<char>(241), 1, 24, 45, 63, 79, 93, 106, static_cast<char>(118),
                         static_cast<char>(129), static_cast<char>(141), static_cast<char>(153),
                         static_cast<char>(166), static_cast<char>(181), static_cast<char>(197),
                         static_cast<char>(217), static_cast<char>(241));
    return _mm256_shuffle_epi8(levels, nibbles(b + 2));
  }
  static float scale(const uint8_t* b) { return f16(b); }
  static float coeff(const uint8_t* b) { return -128.0f * f16(b); }
};

// Q4_K / Q5_K: eight 6-bit (scale, min) pairs in 12 bytes (ggml's get_scale_min_k4).
inline void scales_mins_k4(const uint8_t* q, int* sc, int* mn) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      sc[j] = q[j] & 63;
      mn[j] = q[j + 4] & 63;
    } else {
      sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
      mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
  }
}

// Q4_K (kFifth = false) and Q5_K quants as unsigned bytes: for each 64 elements j = 0..3,
// fn(j, lo, hi) with lo the 32 elements of subblock 2j, hi those of subblock 2j + 1.
template <bool kFifth, class Fn>
inline void unpack_q45k(const uint8_t* b, Fn&& fn) {
  const uint8_t* qs = b + (kFifth ? 48 : 16);
  const __m256i low4 = _mm256_set1_epi8(0x0F), sixteen = _mm256_set1_epi8(16);
  const __m256i qh = kFifth ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16))
                            : _mm256_setzero_si256();
  for (int j = 0; j < 4; ++j) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
    __m256i lo = _mm256_and_si256(q, low4);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    if constexpr (kFifth) {
      lo = _mm256_mask_add_epi8(lo, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(1 << (2 * j))), lo,
                                sixteen);
      hi = _mm256_mask_add_epi8(
          hi, _mm256_test_epi8_mask(qh, _mm256_set1_epi8(static_cast<char>(2 << (2 * j)))), hi,
          sixteen);
    }
    fn(j, lo, hi);
  }
}

// Q6_K quants as unsigned bytes (value + 32): for each half h = 0..1 and group g = 0..3,
// fn(h, g, u) with u elements 128h + 32g .. + 31, whose scales are sc[8h + 2g] (first 16) and
// sc[8h + 2g + 1].
template <class Fn>
inline void unpack_q6k(const uint8_t* b, Fn&& fn) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b + 64 * h;
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    fn(h, 0,
       _mm256_or_si256(_mm256_and_si256(l0, low4),
                       _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)));
    fn(h, 1,
       _mm256_or_si256(_mm256_and_si256(l1, low4),
                       _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)));
    fn(h, 2,
       _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                       _mm256_and_si256(qh, bits45)));
    fn(h, 3,
       _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                       _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)));
  }
}

}  // namespace rlx::cpu::detail::avx512
