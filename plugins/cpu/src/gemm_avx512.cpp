// The GEMM kernels built for one ISA (flags set for this file in plugins/cpu/CMakeLists.txt).
// AVX-512 (F, BW, VL, DQ) with FMA: a 6 x 64 f32 tile in 24 zmm accumulators (6 x 32 in f64); on
// the Xeon it was tuned on it beat 14 x 32, 12 x 32, 8 x 32 and 8 x 48 on the batch-1 MiniLM
// shapes (M = 32, 128; N = 384, 1536) and tied on large squares (docs/decisions.md).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <type_traits>
#include <utility>

#include "gemm_backend.h"
#include "gemm_tuning.h"
#include "half_inline.h"
#include "rlx/core/half.h"

namespace rlx::cpu {
namespace {

constexpr int kVecBytes = 64;
constexpr int kMrF32 = 6, kNvF32 = 4, kMrF64 = 6, kNvF64 = 4;
// Cache blocking; RLX_CPU_GEMM_KC / _MC / _NC override it for tuning runs (bench/gemm).
const int64_t kKc = blocking_from_env("RLX_CPU_GEMM_KC", 256, 1);
const int64_t kMc = blocking_from_env("RLX_CPU_GEMM_MC", kMrF32 * 32, kMrF32);
const int64_t kNc = blocking_from_env(
    "RLX_CPU_GEMM_NC", 1024, std::lcm(kNvF32 * kVecBytes / 4, kNvF64 * kVecBytes / 8));

#include "gemm_kernels.inc"

const GemmBackend kBackend = make_backend(GemmIsa::kAvx512);

}  // namespace

const GemmBackend& gemm_backend_avx512() { return kBackend; }

}  // namespace rlx::cpu
