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

// How attention's K and V are stored: f32, or a 16-bit float that the loops reading K and V
// convert to f32 as they load it (a KV cache kept in f16 or bf16 halves what decoding reads; no
// f32 copy of the cache is made). The arithmetic is f32 either way.
enum class KvElem : uint8_t { kF32, kF16, kBF16 };
inline constexpr int kKvElems = 3;
inline constexpr int64_t kv_elem_size(KvElem e) {
  return e == KvElem::kF32 ? 4 : 2;
}
// Element i of a K or V buffer of type e, as f32 (the scalar paths).
float kv_load(KvElem e, const void* data, int64_t i);

// The loops that read K or V, one set per KvElem: pointers and strides are in elements of that
// type.
struct NnKvLoops {
  // S[r * s_stride + j] = dot(q_r, k_j) * scale for r < rows, j < keys.
  void (*qk_scores)(const float* q, int64_t q_stride, int64_t rows, const void* k, int64_t k_stride,
                    int64_t keys, int64_t d, float scale, float* s, int64_t s_stride);
  // K transposed into f32, kt[i * ld + j] = k_j[i], for qk_scores_kt.
  void (*pack_kt)(const void* k, int64_t k_stride, int64_t keys, int64_t d, float* kt, int64_t ld);
  // o[r][0:dv] = alpha[r] * o[r] + sum_j p[r][j] * v[j * v_stride + 0:dv] for r < rows <=
  // kNnRows: each row of V is loaded once for all the rows.
  void (*pv_accumulate)(float* const* o, int64_t rows, int64_t dv, const float* alpha,
                        const float* const* p, int64_t keys, const void* v, int64_t v_stride);
};

struct NnSimd {
  const char* name;        // "avx512" | "portable"
  NnKvLoops kv[kKvElems];  // indexed by KvElem
  // Scores from K transposed (NnKvLoops::pack_kt writes it), for up to kNnRows query rows q[r]
  // at once: S[r * s_stride + j] = dot(q_r, k_j) * scale for r < rows. Each row of kt is loaded
  // once for all the rows, which is what makes scoring several rows together cheaper. kt must
  // be readable up to the next multiple of 16 columns past `keys`.
  void (*qk_scores_kt)(const float* const* q, int64_t rows, const float* kt, int64_t ld,
                       int64_t keys, int64_t d, float scale, float* s, int64_t s_stride);
  float (*row_max)(const float* x, int64_t n, bool* saw_nan);
  // out[j] = (x[j] == -inf) ? 0 : exp(x[j] - m); returns the sum of out.
  float (*exp_shifted)(const float* x, int64_t n, float m, float* out);
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
