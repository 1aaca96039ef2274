// The few vector loops the native transformer kernels (nn_*.cpp) spend their time in, as a
// table of functions: a portable set and an AVX-512 set, picked once per process from what the
// host CPU supports. The kernels own the algorithms (tiling, online softmax, threading); these
// own the instructions.
//
// Shared semantics, so that both sets and the MIR decompositions agree:
// * exp_shifted maps -inf to exactly 0 and propagates NaN (a NaN score gives a NaN row, as the
//   decomposition's max/exp/sum would);
// * row_max ignores NaN and reports it through *saw_nan instead, so callers decide.
#pragma once
#include <cstdint>

namespace rlx::cpu {

// Query rows that qk_scores_kt and pv_accumulate take at once.
inline constexpr int64_t kNnRows = 4;

struct NnSimd {
  const char* name;  // "avx512" | "portable"
  // S[r * s_stride + j] = dot(q_r, k_j) * scale for r < rows, j < keys.
  void (*qk_scores)(const float* q, int64_t q_stride, int64_t rows, const float* k,
                    int64_t k_stride, int64_t keys, int64_t d, float scale, float* s,
                    int64_t s_stride);
  // The same from K transposed, kt[i * ld + j] = k_j[i] (pack_kt writes it), for up to
  // kNnRows query rows q[r] at once: S[r * s_stride + j] for r < rows. Each row of kt is loaded
  // once for all the rows, which is what makes scoring several rows together cheaper. kt must
  // be readable up to the next multiple of 16 columns past `keys`.
  void (*pack_kt)(const float* k, int64_t k_stride, int64_t keys, int64_t d, float* kt, int64_t ld);
  void (*qk_scores_kt)(const float* const* q, int64_t rows, const float* kt, int64_t ld,
                       int64_t keys, int64_t d, float scale, float* s, int64_t s_stride);
  float (*row_max)(const float* x, int64_t n, bool* saw_nan);
  // out[j] = (x[j] == -inf) ? 0 : exp(x[j] - m); returns the sum of out.
  float (*exp_shifted)(const float* x, int64_t n, float m, float* out);
  // o[r][0:dv] = alpha[r] * o[r] + sum_j p[r][j] * v[j * v_stride + 0:dv] for r < rows <=
  // kNnRows: each row of V is loaded once for all the rows.
  void (*pv_accumulate)(float* const* o, int64_t rows, int64_t dv, const float* alpha,
                        const float* const* p, int64_t keys, const float* v, int64_t v_stride);
  float (*sum)(const float* x, int64_t n);
  float (*sum_sq_centered)(const float* x, int64_t n, float mean);  // sum (x - mean)^2
  // out = (x - shift) * mul [* g] [+ b]; g and b may be null.
  void (*normalize)(const float* x, int64_t n, float shift, float mul, const float* g,
                    const float* b, float* out);
  void (*divide)(const float* x, int64_t n, float denom, float* out);  // out = x / denom
};

// The set this host runs: AVX-512 where the CPU has AVX-512F, else the portable one.
const NnSimd& nn_simd();
const NnSimd& nn_simd_portable();
// Null when the host (or the compiler) has no AVX-512F.
const NnSimd* nn_simd_avx512();

}  // namespace rlx::cpu
