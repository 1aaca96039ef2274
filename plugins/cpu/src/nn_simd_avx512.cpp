// The AVX-512 set of nn vector loops. Every function here is compiled for AVX-512F through a
// target pragma (the rest of the plugin stays baseline x86-64) and only reached after
// nn_simd_avx512() checked the CPU. All functions have internal linkage, so no AVX-512 code can
// be picked by the linker for a baseline caller.
#include "nn_simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RLX_NN_AVX512 1
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace rlx::cpu {

#ifdef RLX_NN_AVX512

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_ps) as uninitialised once they are inlined here.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,fma")
#endif

namespace {

constexpr int64_t kLanes = 16;

inline __mmask16 tail_mask(int64_t left) {
  return left >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// K and V elements as stored (KvElem): f32, or f16 / bf16 bits.
template <KvElem E>
using Stored = std::conditional_t<E == KvElem::kF32, float, uint16_t>;

// 16 stored elements widened to f32 (exactly: every f16 and bf16 is an f32).
template <KvElem E>
inline __m512 widen16(__m256i h) {
  if constexpr (E == KvElem::kF16)
    return _mm512_cvtph_ps(h);
  else
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// The lanes of mask m of p[0:16] as f32, the others 0; nothing outside the mask is read. A
// masked 16-bit load needs AVX512BW, so a partial vector of f16 or bf16 (the tail of a row)
// goes through a zeroed copy instead.
template <KvElem E>
inline __m512 load_kv(const Stored<E>* p, __mmask16 m) {
  if constexpr (E == KvElem::kF32) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    if (m == 0xFFFF) return widen16<E>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    alignas(32) uint16_t part[kLanes] = {};
    for (int i = 0; i < kLanes; ++i)
      if (m >> i & 1) part[i] = p[i];
    return widen16<E>(_mm256_load_si256(reinterpret_cast<const __m256i*>(part)));
  }
}

#include "vexp_avx512.inc"

// Horizontal sums of four vectors at once: [sum a0, sum a1, sum a2, sum a3].
inline __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  __m512 t0 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
  __m512 t1 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
  __m512d d0 = _mm512_castps_pd(t0), d1 = _mm512_castps_pd(t1);
  __m512 u = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(d0, d1)),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(d0, d1)));
  __m256 h = _mm256_add_ps(_mm512_castps512_ps256(u),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(u), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

template <KvElem E>
void qk_scores(const float* q, int64_t q_stride, int64_t rows, const void* k_data, int64_t k_stride,
               int64_t keys, int64_t d, float scale, float* s, int64_t s_stride) {
  const auto* k = static_cast<const Stored<E>*>(k_data);
  const __m128 sc = _mm_set1_ps(scale);
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = q + r * q_stride;
    float* out = s + r * s_stride;
    int64_t j = 0;
    for (; j + 4 <= keys; j += 4) {
      const Stored<E>* b = k + j * k_stride;
      __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
      for (int64_t i = 0; i < d; i += kLanes) {
        __mmask16 m = tail_mask(d - i);
        __m512 x = _mm512_maskz_loadu_ps(m, a + i);
        c0 = _mm512_fmadd_ps(x, load_kv<E>(b + i, m), c0);
        c1 = _mm512_fmadd_ps(x, load_kv<E>(b + k_stride + i, m), c1);
        c2 = _mm512_fmadd_ps(x, load_kv<E>(b + 2 * k_stride + i, m), c2);
        c3 = _mm512_fmadd_ps(x, load_kv<E>(b + 3 * k_stride + i, m), c3);
      }
      _mm_storeu_ps(out + j, _mm_mul_ps(hsum4(c0, c1, c2, c3), sc));
    }
    for (; j < keys; ++j) {
      const Stored<E>* b = k + j * k_stride;
      __m512 c = _mm512_setzero_ps();
      for (int64_t i = 0; i < d; i += kLanes) {
        __mmask16 m = tail_mask(d - i);
        c = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), load_kv<E>(b + i, m), c);
      }
      out[j] = _mm512_reduce_add_ps(c) * scale;
    }
  }
}

// Columns of 16 keys at a time through gathers (one per head-dim element).
void pack_kt_f32(const float* k, int64_t k_stride, int64_t keys, int64_t d, float* kt, int64_t ld) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i idx = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(k_stride)));
  for (int64_t j0 = 0; j0 < keys; j0 += kLanes) {
    const __mmask16 t = tail_mask(keys - j0);
    const float* base = k + j0 * k_stride;
    for (int64_t i = 0; i < d; ++i)
      _mm512_mask_storeu_ps(kt + i * ld + j0, t,
                            _mm512_mask_i32gather_ps(_mm512_setzero_ps(), t, idx, base + i, 4));
  }
}

// 16-bit K: 16 keys x 16 head-dim elements at a time are widened into an f32 tile (a gather
// cannot load 16-bit lanes), which the f32 packing then transposes.
template <KvElem E>
void pack_kt(const void* k_data, int64_t k_stride, int64_t keys, int64_t d, float* kt, int64_t ld) {
  const auto* k = static_cast<const Stored<E>*>(k_data);
  if constexpr (E == KvElem::kF32) {
    pack_kt_f32(k, k_stride, keys, d, kt, ld);
  } else {
    alignas(64) float tile[kLanes * kLanes];
    for (int64_t j0 = 0; j0 < keys; j0 += kLanes) {
      const int64_t nk = std::min<int64_t>(kLanes, keys - j0);
      for (int64_t i0 = 0; i0 < d; i0 += kLanes) {
        const __mmask16 m = tail_mask(d - i0);
        for (int64_t j = 0; j < nk; ++j)
          _mm512_store_ps(tile + j * kLanes, load_kv<E>(k + (j0 + j) * k_stride + i0, m));
        pack_kt_f32(tile, kLanes, nk, std::min<int64_t>(kLanes, d - i0), kt + i0 * ld + j0, ld);
      }
    }
  }
}

// Independent accumulator sets for a loop whose step carries NV vector FMAs: enough chains
// (about 8) to cover the FMA latency when NV is small.
constexpr int sets_for(int nv) {
  return nv <= 2 ? 4 : nv <= 4 ? 2 : 1;
}

// One query row against up to NC * 16 packed keys, the scores kept in registers.
template <int NC>
void qk_kt_chunk(const float* q, const float* kt, int64_t ld, int64_t keys, int64_t d, float scale,
                 float* s) {
  constexpr int kSets = sets_for(NC);
  __m512 acc[kSets][NC];
#pragma GCC unroll 4
  for (int u = 0; u < kSets; ++u)
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c) acc[u][c] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + kSets <= d; i += kSets)
#pragma GCC unroll 4
    for (int u = 0; u < kSets; ++u) {
      const __m512 qi = _mm512_set1_ps(q[i + u]);
      const float* row = kt + (i + u) * ld;
#pragma GCC unroll 8
      for (int c = 0; c < NC; ++c)
        acc[u][c] = _mm512_fmadd_ps(qi, _mm512_loadu_ps(row + c * kLanes), acc[u][c]);
    }
  for (; i < d; ++i) {
    const __m512 qi = _mm512_set1_ps(q[i]);
#pragma GCC unroll 8
    for (int c = 0; c < NC; ++c)
      acc[0][c] = _mm512_fmadd_ps(qi, _mm512_loadu_ps(kt + i * ld + c * kLanes), acc[0][c]);
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int c = 0; c < NC; ++c) {
    __m512 total = acc[0][c];
#pragma GCC unroll 4
    for (int u = 1; u < kSets; ++u) total = _mm512_add_ps(total, acc[u][c]);
    _mm512_mask_storeu_ps(s + c * kLanes, tail_mask(keys - c * kLanes), _mm512_mul_ps(total, sc));
  }
}

void qk_scores_kt_row(const float* q, const float* kt, int64_t ld, int64_t keys, int64_t d,
                      float scale, float* s) {
  for (int64_t j0 = 0; j0 < keys; j0 += 8 * kLanes) {
    const int64_t n = std::min<int64_t>(keys - j0, 8 * kLanes);
    switch ((n + kLanes - 1) / kLanes) {
      case 1:
        qk_kt_chunk<1>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 2:
        qk_kt_chunk<2>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 3:
        qk_kt_chunk<3>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 4:
        qk_kt_chunk<4>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 5:
        qk_kt_chunk<5>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 6:
        qk_kt_chunk<6>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      case 7:
        qk_kt_chunk<7>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
      default:
        qk_kt_chunk<8>(q, kt + j0, ld, n, d, scale, s + j0);
        break;
    }
  }
}

// R query rows against up to NC * 16 packed keys: R x NC accumulators, each packed K row
// loaded once for the R rows (R + NC loads per R * NC FMAs instead of 1 + NC per NC).
template <int R, int NC>
void qk_kt_rows(const float* const* q, const float* kt, int64_t ld, int64_t keys, int64_t d,
                float scale, float* s, int64_t s_stride) {
  __m512 acc[R][NC];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t i = 0; i < d; ++i) {
    __m512 b[NC];
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) b[c] = _mm512_loadu_ps(kt + i * ld + c * kLanes);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 qi = _mm512_set1_ps(q[r][i]);
#pragma GCC unroll 4
      for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(qi, b[c], acc[r][c]);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      _mm512_mask_storeu_ps(s + r * s_stride + c * kLanes, tail_mask(keys - c * kLanes),
                            _mm512_mul_ps(acc[r][c], sc));
}

template <int R>
void qk_kt_rows_any(const float* const* q, const float* kt, int64_t ld, int64_t keys, int64_t d,
                    float scale, float* s, int64_t s_stride) {
  for (int64_t j0 = 0; j0 < keys; j0 += 4 * kLanes) {
    const int64_t n = std::min<int64_t>(keys - j0, 4 * kLanes);
    switch ((n + kLanes - 1) / kLanes) {
      case 1:
        qk_kt_rows<R, 1>(q, kt + j0, ld, n, d, scale, s + j0, s_stride);
        break;
      case 2:
        qk_kt_rows<R, 2>(q, kt + j0, ld, n, d, scale, s + j0, s_stride);
        break;
      case 3:
        qk_kt_rows<R, 3>(q, kt + j0, ld, n, d, scale, s + j0, s_stride);
        break;
      default:
        qk_kt_rows<R, 4>(q, kt + j0, ld, n, d, scale, s + j0, s_stride);
        break;
    }
  }
}

void qk_scores_kt(const float* const* q, int64_t rows, const float* kt, int64_t ld, int64_t keys,
                  int64_t d, float scale, float* s, int64_t s_stride) {
  static_assert(kNnRows == 4, "one case per row count, here and in pv_accumulate");
  switch (rows) {
    case 1:
      return qk_scores_kt_row(q[0], kt, ld, keys, d, scale, s);
    case 2:
      return qk_kt_rows_any<2>(q, kt, ld, keys, d, scale, s, s_stride);
    case 3:
      return qk_kt_rows_any<3>(q, kt, ld, keys, d, scale, s, s_stride);
    default:
      return qk_kt_rows_any<4>(q, kt, ld, keys, d, scale, s, s_stride);  // rows <= 4
  }
}

float row_max(const float* x, int64_t n, bool* saw_nan) {
  __m512 acc = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __mmask16 nan = 0;
  for (int64_t i = 0; i < n; i += kLanes) {
    __mmask16 m = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
    acc = _mm512_mask_max_ps(acc, m, v, acc);  // a NaN v yields acc: NaN is reported, not kept
  }
  if (nan) *saw_nan = true;
  return _mm512_reduce_max_ps(acc);
}

float exp_shifted(const float* x, int64_t n, float m, float* out) {
  const __m512 shift = _mm512_set1_ps(m),
               ninf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 total = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes) {
    __mmask16 t = tail_mask(n - i);
    __m512 v = _mm512_maskz_loadu_ps(t, x + i);
    __mmask16 live = _mm512_mask_cmp_ps_mask(t, v, ninf, _CMP_NEQ_UQ);  // NaN stays live
    __m512 e = _mm512_maskz_mov_ps(live, vexp(_mm512_sub_ps(v, shift)));
    total = _mm512_add_ps(total, e);
    _mm512_mask_storeu_ps(out + i, t, e);
  }
  return _mm512_reduce_add_ps(total);
}

// o = alpha * o + p V for one chunk of up to NV * 16 output columns, kept in registers.
template <KvElem E, int NV>
void pv_chunk(float* o, int64_t width, float alpha, const float* p, int64_t keys,
              const Stored<E>* v, int64_t v_stride) {
  constexpr int kSets = sets_for(NV);
  __m512 acc[kSets][NV];
  __mmask16 m[NV];
  const __m512 a = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
  for (int c = 0; c < NV; ++c) {
    m[c] = tail_mask(width - c * kLanes);
    acc[0][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], o + c * kLanes), a);
#pragma GCC unroll 4
    for (int u = 1; u < kSets; ++u) acc[u][c] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + kSets <= keys; j += kSets)
#pragma GCC unroll 4
    for (int u = 0; u < kSets; ++u) {
      const __m512 pj = _mm512_set1_ps(p[j + u]);
      const Stored<E>* row = v + (j + u) * v_stride;
#pragma GCC unroll 8
      for (int c = 0; c < NV; ++c)
        acc[u][c] = _mm512_fmadd_ps(pj, load_kv<E>(row + c * kLanes, m[c]), acc[u][c]);
    }
  for (; j < keys; ++j) {
    const __m512 pj = _mm512_set1_ps(p[j]);
    const Stored<E>* row = v + j * v_stride;
#pragma GCC unroll 8
    for (int c = 0; c < NV; ++c)
      acc[0][c] = _mm512_fmadd_ps(pj, load_kv<E>(row + c * kLanes, m[c]), acc[0][c]);
  }
#pragma GCC unroll 8
  for (int c = 0; c < NV; ++c) {
    __m512 total = acc[0][c];
#pragma GCC unroll 4
    for (int u = 1; u < kSets; ++u) total = _mm512_add_ps(total, acc[u][c]);
    _mm512_mask_storeu_ps(o + c * kLanes, m[c], total);
  }
}

template <KvElem E>
void pv_accumulate_row(float* o, int64_t dv, float alpha, const float* p, int64_t keys,
                       const Stored<E>* v, int64_t v_stride) {
  for (int64_t c0 = 0; c0 < dv; c0 += 8 * kLanes) {
    int64_t w = std::min<int64_t>(dv - c0, 8 * kLanes);
    switch ((w + kLanes - 1) / kLanes) {
      case 1:
        pv_chunk<E, 1>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 2:
        pv_chunk<E, 2>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 3:
        pv_chunk<E, 3>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 4:
        pv_chunk<E, 4>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 5:
        pv_chunk<E, 5>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 6:
        pv_chunk<E, 6>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      case 7:
        pv_chunk<E, 7>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
      default:
        pv_chunk<E, 8>(o + c0, w, alpha, p, keys, v + c0, v_stride);
        break;
    }
  }
}

// o[r] = alpha[r] o[r] + p[r] V for R rows and up to NV * 16 output columns (from column c0):
// each V row is loaded once for the R rows.
template <KvElem E, int R, int NV>
void pv_rows(float* const* o, int64_t c0, int64_t width, const float* alpha, const float* const* p,
             int64_t keys, const Stored<E>* v, int64_t v_stride) {
  __m512 acc[R][NV];
  __mmask16 m[NV];
#pragma GCC unroll 4
  for (int c = 0; c < NV; ++c) m[c] = tail_mask(width - c * kLanes);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c)
      acc[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[c], o[r] + c0 + c * kLanes), a);
  }
  for (int64_t j = 0; j < keys; ++j) {
    __m512 b[NV];
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) b[c] = load_kv<E>(v + j * v_stride + c0 + c * kLanes, m[c]);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 pj = _mm512_set1_ps(p[r][j]);
#pragma GCC unroll 4
      for (int c = 0; c < NV; ++c) acc[r][c] = _mm512_fmadd_ps(pj, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < NV; ++c) _mm512_mask_storeu_ps(o[r] + c0 + c * kLanes, m[c], acc[r][c]);
}

template <KvElem E, int R>
void pv_rows_any(float* const* o, int64_t dv, const float* alpha, const float* const* p,
                 int64_t keys, const Stored<E>* v, int64_t v_stride) {
  for (int64_t c0 = 0; c0 < dv; c0 += 4 * kLanes) {
    const int64_t w = std::min<int64_t>(dv - c0, 4 * kLanes);
    switch ((w + kLanes - 1) / kLanes) {
      case 1:
        pv_rows<E, R, 1>(o, c0, w, alpha, p, keys, v, v_stride);
        break;
      case 2:
        pv_rows<E, R, 2>(o, c0, w, alpha, p, keys, v, v_stride);
        break;
      case 3:
        pv_rows<E, R, 3>(o, c0, w, alpha, p, keys, v, v_stride);
        break;
      default:
        pv_rows<E, R, 4>(o, c0, w, alpha, p, keys, v, v_stride);
        break;
    }
  }
}

template <KvElem E>
void pv_accumulate(float* const* o, int64_t rows, int64_t dv, const float* alpha,
                   const float* const* p, int64_t keys, const void* v_data, int64_t v_stride) {
  const auto* v = static_cast<const Stored<E>*>(v_data);
  switch (rows) {
    case 1:
      return pv_accumulate_row<E>(o[0], dv, alpha[0], p[0], keys, v, v_stride);
    case 2:
      return pv_rows_any<E, 2>(o, dv, alpha, p, keys, v, v_stride);
    case 3:
      return pv_rows_any<E, 3>(o, dv, alpha, p, keys, v, v_stride);
    default:
      return pv_rows_any<E, 4>(o, dv, alpha, p, keys, v, v_stride);  // rows <= 4
  }
}

template <KvElem E>
constexpr NnKvLoops kv_loops() {
  return {qk_scores<E>, pack_kt<E>, pv_accumulate<E>};
}

float sum(const float* x, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes)
    acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
  return _mm512_reduce_add_ps(acc);
}

float sum_sq_centered(const float* x, int64_t n, float mean) {
  const __m512 mu = _mm512_set1_ps(mean);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += kLanes) {
    __mmask16 t = tail_mask(n - i);
    __m512 c = _mm512_maskz_sub_ps(t, _mm512_maskz_loadu_ps(t, x + i), mu);
    acc = _mm512_fmadd_ps(c, c, acc);
  }
  return _mm512_reduce_add_ps(acc);
}

void normalize(const float* x, int64_t n, float shift, float mul, const float* g, const float* b,
               float* out) {
  const __m512 s = _mm512_set1_ps(shift), k = _mm512_set1_ps(mul);
  for (int64_t i = 0; i < n; i += kLanes) {
    __mmask16 t = tail_mask(n - i);
    __m512 y = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, x + i), s), k);
    if (g) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(t, g + i));
    if (b) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(t, b + i));
    _mm512_mask_storeu_ps(out + i, t, y);
  }
}

void divide(const float* x, int64_t n, float denom, float* out) {
  const __m512 d = _mm512_set1_ps(denom);
  for (int64_t i = 0; i < n; i += kLanes) {
    __mmask16 t = tail_mask(n - i);
    _mm512_mask_storeu_ps(out + i, t, _mm512_div_ps(_mm512_maskz_loadu_ps(t, x + i), d));
  }
}

}  // namespace

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

const NnSimd* nn_simd_avx512() {
  static const NnSimd kSet{
      "avx512",
      {kv_loops<KvElem::kF32>(), kv_loops<KvElem::kF16>(), kv_loops<KvElem::kBF16>()},
      qk_scores_kt,
      row_max,
      exp_shifted,
      sum,
      sum_sq_centered,
      normalize,
      divide};
  static const bool host_has_it = __builtin_cpu_supports("avx512f");
  return host_has_it ? &kSet : nullptr;
}

#else

const NnSimd* nn_simd_avx512() {
  return nullptr;
}

#endif

}  // namespace rlx::cpu
