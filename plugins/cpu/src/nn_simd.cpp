// The portable set of nn vector loops (plain C++; the compiler vectorises what it can) and the
// choice between it and the AVX-512 set.
#include "nn_simd.h"

#include <cmath>
#include <limits>

#include "half_inline.h"

namespace rlx::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Element i of K or V stored as E, as f32 (f16 and bf16 convert exactly).
template <KvElem E>
float load(const void* p, int64_t i) {
  if constexpr (E == KvElem::kF32)
    return static_cast<const float*>(p)[i];
  else if constexpr (E == KvElem::kF16)
    return f16_widen_inline(static_cast<const uint16_t*>(p)[i]);
  else
    return bf16_widen_inline(static_cast<const uint16_t*>(p)[i]);
}

template <KvElem E>
void qk_scores(const float* q, int64_t q_stride, int64_t rows, const void* k, int64_t k_stride,
               int64_t keys, int64_t d, float scale, float* s, int64_t s_stride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < keys; ++j) {
      const float* a = q + r * q_stride;
      float acc = 0;
      for (int64_t i = 0; i < d; ++i) acc += a[i] * load<E>(k, j * k_stride + i);
      s[r * s_stride + j] = acc * scale;
    }
}

template <KvElem E>
void pack_kt(const void* k, int64_t k_stride, int64_t keys, int64_t d, float* kt, int64_t ld) {
  for (int64_t j = 0; j < keys; ++j)
    for (int64_t i = 0; i < d; ++i) kt[i * ld + j] = load<E>(k, j * k_stride + i);
}

template <KvElem E>
void pv_accumulate(float* const* o, int64_t rows, int64_t dv, const float* alpha,
                   const float* const* p, int64_t keys, const void* v, int64_t v_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < dv; ++i) o[r][i] *= alpha[r];
    for (int64_t j = 0; j < keys; ++j) {
      const float pj = p[r][j];
      for (int64_t i = 0; i < dv; ++i) o[r][i] += pj * load<E>(v, j * v_stride + i);
    }
  }
}

template <KvElem E>
constexpr NnKvLoops kv_loops() {
  return {qk_scores<E>, pack_kt<E>, pv_accumulate<E>};
}

void qk_scores_kt(const float* const* q, int64_t rows, const float* kt, int64_t ld, int64_t keys,
                  int64_t d, float scale, float* s, int64_t s_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = s + r * s_stride;
    for (int64_t j = 0; j < keys; ++j) out[j] = 0;
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < keys; ++j) out[j] += q[r][i] * kt[i * ld + j];
    for (int64_t j = 0; j < keys; ++j) out[j] *= scale;
  }
}

float row_max(const float* x, int64_t n, bool* saw_nan) {
  float m = kNegInf;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] != x[i])
      *saw_nan = true;
    else if (x[i] > m)
      m = x[i];
  }
  return m;
}

float exp_shifted(const float* x, int64_t n, float m, float* out) {
  float total = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x[i] == kNegInf ? 0.0f : std::exp(x[i] - m);
    total += out[i];
  }
  return total;
}

float sum(const float* x, int64_t n) {
  float total = 0;
  for (int64_t i = 0; i < n; ++i) total += x[i];
  return total;
}

float sum_sq_centered(const float* x, int64_t n, float mean) {
  float total = 0;
  for (int64_t i = 0; i < n; ++i) total += (x[i] - mean) * (x[i] - mean);
  return total;
}

void normalize(const float* x, int64_t n, float shift, float mul, const float* g, const float* b,
               float* out) {
  for (int64_t i = 0; i < n; ++i) {
    float y = (x[i] - shift) * mul;
    if (g) y *= g[i];
    if (b) y += b[i];
    out[i] = y;
  }
}

void divide(const float* x, int64_t n, float denom, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] / denom;
}

}  // namespace

float kv_load(KvElem e, const void* data, int64_t i) {
  switch (e) {
    case KvElem::kF16:
      return load<KvElem::kF16>(data, i);
    case KvElem::kBF16:
      return load<KvElem::kBF16>(data, i);
    default:
      return load<KvElem::kF32>(data, i);
  }
}

const NnSimd& nn_simd_portable() {
  static const NnSimd kSet{
      "portable",
      {kv_loops<KvElem::kF32>(), kv_loops<KvElem::kF16>(), kv_loops<KvElem::kBF16>()},
      qk_scores_kt,
      row_max,
      exp_shifted,
      sum,
      sum_sq_centered,
      normalize,
      divide};
  return kSet;
}

const NnSimd& nn_simd() {
  static const NnSimd& chosen = []() -> const NnSimd& {
    const NnSimd* wide = nn_simd_avx512();
    return wide ? *wide : nn_simd_portable();
  }();
  return chosen;
}

}  // namespace rlx::cpu
