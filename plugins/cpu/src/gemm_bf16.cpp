// The bf16 GEMM's driver (gemm_bf16.h): packing, the split into tasks, the epilogue and the
// stores, shared by both units, whose register blocks are in gemm_bf16_amx.cpp and
// gemm_bf16_dot.cpp. A task takes a block of rows and a run of panels; each 32 x 32 block's sums
// go to a stack tile, through the epilogue, and out as f32 or bf16.
#include "gemm_bf16.h"

#include <fmt/format.h>
#include <immintrin.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "amx_tiles.h"
#include "bf16_avx512.h"
#include "gemm_bf16_blocks.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx::cpu {

namespace {

// Row r of the f32 tile t (cols columns) to C; with `bias` (bf16, this tile's columns) each
// value is rounded to bf16, widened, added to the bias and rounded again.
void store_row(const float* t, int64_t cols, DType c_dtype, void* c, int64_t offset,
               const uint16_t* bias) {
  if (c_dtype == DType::kF32) {
    std::memcpy(static_cast<float*>(c) + offset, t, static_cast<size_t>(cols) * sizeof(float));
    return;
  }
  uint16_t* out = static_cast<uint16_t*>(c) + offset;
  int64_t j = 0;
  for (; j + 16 <= cols; j += 16) {
    __m256i r = bf16_from_f32(_mm512_loadu_ps(t + j));
    if (bias)
      r = bf16_from_f32(_mm512_add_ps(
          bf16_widen(r),
          bf16_widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + j)))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), r);
  }
  for (; j < cols; ++j)
    out[j] = bias ? f32_to_bf16(bf16_to_f32(f32_to_bf16(t[j])) + bf16_to_f32(bias[j]))
                  : f32_to_bf16(t[j]);
}

}  // namespace

bool amx_bf16_enabled() {
  static const bool ok = [] {
    const char* env = std::getenv("RLX_CPU_AMX_BF16");
    if (env && std::string(env) == "0") return false;
    return __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           amx::request_tile_state();
  }();
  return ok;
}

bool avx512_bf16_enabled() {
  static const bool ok = [] {
    const char* env = std::getenv("RLX_CPU_AVX512_BF16");
    if (env && std::string(env) == "0") return false;
    return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw");
  }();
  return ok;
}

Bf16Unit bf16_unit() {
  if (amx_bf16_enabled()) return Bf16Unit::kAmx;
  if (avx512_bf16_enabled()) return Bf16Unit::kAvx512Bf16;
  return Bf16Unit::kNone;
}

const char* bf16_unit_name(Bf16Unit unit) {
  switch (unit) {
    case Bf16Unit::kAmx:
      return "AMX tiles (tdpbf16ps)";
    case Bf16Unit::kAvx512Bf16:
      return "AVX512-BF16 (vdpbf16ps)";
    case Bf16Unit::kNone:
      break;
  }
  return "none";
}

bool bf16_gemm_takes(const MatView& a, int64_t K) {
  return a.dtype == DType::kBF16 && a.cs == 1 && K > 0 && K % 32 == 0;
}

PackedBf16B pack_bf16_b(const MatView& b, int64_t K, int64_t N) {
  PackedBf16B p;
  p.k = K, p.n = N, p.kp = (K + 31) / 32 * 32, p.panels = (N + 15) / 16;
  p.data.assign(static_cast<size_t>(p.panels * p.kp * 16), 0);
  const auto* src = static_cast<const uint16_t*>(b.data);
  for (int64_t n = 0; n < N; ++n) {
    uint16_t* panel = p.data.data() + (n / 16) * p.kp * 16;
    const int64_t lane = n % 16;
    for (int64_t k = 0; k < K; ++k)
      panel[(k / 2) * 32 + lane * 2 + k % 2] = src[k * b.rs + n * b.cs];
  }
  return p;
}

void bf16_gemm(Bf16Unit unit, const MatView& a, int64_t M, const PackedBf16B& b,
               const GemmEpilogue* ep, DType c_dtype, void* c, int64_t ldc,
               const uint16_t* bias16) {
  if (M <= 0 || b.panels == 0) return;
  if (bias16 && (c_dtype != DType::kBF16 || (ep && !ep->empty())))
    throw_internal_error("bf16_gemm: a bf16 bias row needs bf16 results and no epilogue");
  if (unit == Bf16Unit::kNone || (unit == Bf16Unit::kAmx && !amx_bf16_enabled()) ||
      (unit == Bf16Unit::kAvx512Bf16 && !avx512_bf16_enabled()))
    throw_internal_error(
        fmt::format("bf16_gemm: {} is not available on this CPU", bf16_unit_name(unit)));
  const bool amx = unit == Bf16Unit::kAmx;
  const Bf16Block block = amx ? amx_bf16_block : avx512_bf16_block;
  const auto* A = static_cast<const uint16_t*>(a.data);
  const int64_t pairs = (b.panels + 1) / 2, blocks = (M + 31) / 32;
  // Tasks of 32 rows x 4 panel pairs (128 columns): the product of 128 x 384 x 384 (MiniLM's
  // q, k, v at batch 1) still makes 12 of them for the threads.
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, blocks, 1, 0, pairs, 4),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      alignas(64) float t[32 * 32];
                      for (int64_t blk = r.rows().begin(); blk < r.rows().end(); ++blk) {
                        const int64_t m = blk * 32;
                        const int rows = static_cast<int>(std::min<int64_t>(32, M - m));
                        for (int64_t pair = r.cols().begin(); pair < r.cols().end(); ++pair) {
                          const int64_t p = pair * 2;
                          const bool two = p + 1 < b.panels;
                          block(A + m * a.rs, a.rs, rows, b, p, two, t);
                          const int64_t n0 = p * 16, cols = std::min<int64_t>(b.n, n0 + 32) - n0;
                          if (ep && !ep->empty()) apply_epilogue(*ep, t, 32, m, n0, rows, cols);
                          for (int i = 0; i < rows; ++i)
                            store_row(t + i * 32, cols, c_dtype, c, (m + i) * ldc + n0,
                                      bias16 ? bias16 + n0 : nullptr);
                        }
                      }
                      if (amx) amx_bf16_done();
                    });
}

}  // namespace rlx::cpu
