// The GEMM kernels built for one ISA (flags set for this file in plugins/cpu/CMakeLists.txt).
// AVX2 with FMA: 16 ymm registers hold a 6 x 16 f32 tile (12 accumulators), or 6 x 8 in f64.
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

constexpr int kVecBytes = 32;
constexpr int kMrF32 = 6, kNvF32 = 2, kMrF64 = 6, kNvF64 = 2;
// Cache blocking; RLX_CPU_GEMM_KC / _MC / _NC override it for tuning runs (bench/gemm).
const int64_t kKc = blocking_from_env("RLX_CPU_GEMM_KC", 256, 1);
const int64_t kMc = blocking_from_env("RLX_CPU_GEMM_MC", kMrF32 * 24, kMrF32);
const int64_t kNc = blocking_from_env(
    "RLX_CPU_GEMM_NC", 1024, std::lcm(kNvF32 * kVecBytes / 4, kNvF64 * kVecBytes / 8));

#include "gemm_kernels.inc"

const GemmBackend kBackend = make_backend(GemmIsa::kAvx2);

}  // namespace

const GemmBackend& gemm_backend_avx2() { return kBackend; }

}  // namespace rlx::cpu
