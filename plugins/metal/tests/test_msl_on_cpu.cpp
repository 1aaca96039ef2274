// The metal target's kernels run here: the MSL module the target emits, compiled as C++ against
// msl_on_cpu.h and run over the grid on the cpu (msl_on_cpu_api.h), through the SDK's
// DeviceExecutable exactly as a Metal host would drive it, against the cpu target. What this
// proves: the MSL text's semantics (indexing, rounding, reductions, the cooperative kernels'
// shared arrays and barriers, index checks). What it does not: that Apple's compiler accepts the
// text, or how a GPU runs it (docs/targets.md, metal).
#include <gtest/gtest.h>

#include <random>

#include "metal_checks.h"
#include "metal_target.h"
#include "msl_on_cpu_api.h"
#include "target_suite.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::cpu_target;
using test::expect_all_close;
using test::run_text;
using test::uniform_f32;

using metal::test::msl_on_cpu;

// Fused elementwise kernels, reductions, dot_general with batch dims, gather, scatter-add, f16
// and i64 arithmetic.
TEST(MslOnCpu, MixedProgramAgreesWithCpu) {
  metal::test::expect_mixed_program_like_cpu(msl_on_cpu(), 1e-6);
}

// Elementwise ops at f32, f16, bf16, i32 and i64: transcendentals (erf is the prelude's), NaN
// through max, integer division by zero, saturating conversions, round half to even.
TEST(MslOnCpu, ElementwiseOpsAgreeWithCpu) {
  const char* ir = R"(graph @t(%x: f32[64], %y: f32[64], %i: i32[64], %j: i64[64]) {
  %e = exp(%x) : f32[64]
  %t = tanh(%x) : f32[64]
  %r = erf(%x) : f32[64]
  %s = sqrt(%y) : f32[64]
  %l = log(%y) : f32[64]
  %p = pow(%y, %x) : f32[64]
  %m = rem(%x, %y) : f32[64]
  %o = round(%x) : f32[64]
  %mx = max(%x, %y) : f32[64]
  %xh = convert(%x) {dtype = f16} : f16[64]
  %yh = convert(%y) {dtype = f16} : f16[64]
  %mh = mul(%xh, %yh) : f16[64]
  %eh = exp(%mh) : f16[64]
  %xb = convert(%x) {dtype = bf16} : bf16[64]
  %ab = add(%xb, %xb) : bf16[64]
  %d = div(%i, %i) : i32[64]
  %q = rem(%j, %j) : i64[64]
  %k = mul(%j, %j) : i64[64]
  %c = convert(%t) {dtype = i32} : i32[64]
  return %e, %t, %r, %s, %l, %p, %m, %o, %mx, %eh, %ab, %d, %q, %k, %c
}
)";
  std::mt19937 rng(5);
  Tensor x = uniform_f32(rng, {64}, 3.0f), y = uniform_f32(rng, {64}, 2.0f);
  auto* yp = static_cast<float*>(y.data());
  for (int n = 0; n < 64; ++n) yp[n] = std::abs(yp[n]) + 0.25f;
  static_cast<float*>(x.data())[3] = 2.5f;  // round half to even
  static_cast<float*>(x.data())[5] = std::nanf("");
  Tensor i(DType::kI32, {64}), j(DType::kI64, {64});
  for (int n = 0; n < 64; ++n) {
    static_cast<int32_t*>(i.data())[n] = n % 7 - 3;  // zeros divide by zero
    static_cast<int64_t*>(j.data())[n] = (int64_t{1} << 33) * (n % 5 - 2) + n;
  }
  NamedTensors in{{"x", x}, {"y", y}, {"i", i}, {"j", j}};
  NamedTensors want = run_text(ir, in, cpu_target()), got = run_text(ir, in, msl_on_cpu());
  NamedTensors want16;
  for (const char* n : {"eh", "ab"}) {
    want16[n] = want.at(n);
    want.erase(n);
  }
  expect_all_close(want, got, 1e-5);
  expect_all_close(want16, got, 1e-2);
}

// Tiled products (cooperative: threadgroup arrays and barriers) with fused epilogues, at sizes no
// tile divides, and an f16 result.
TEST(MslOnCpu, ProductEpiloguesAgreeWithCpu) {
  metal::test::expect_product_epilogues_like_cpu(msl_on_cpu());
}

// Attention: the tiled kernel (cooperative) and the per-row kernel, storing merged heads.
TEST(MslOnCpu, AttentionsAgreeWithCpu) {
  std::mt19937 rng(17);
  auto random = [&](std::vector<int64_t> shape) { return uniform_f32(rng, std::move(shape), 1.0f); };
  NamedTensors in{{"q", random({2, 3, 20, 8})},
                  {"k", random({2, 3, 20, 8})},
                  {"v", random({2, 3, 20, 8})},
                  {"qd", random({2, 3, 2, 8})}};
  expect_all_close(run_text(test::kMergeHeadsProgram, in, cpu_target()),
                   run_text(test::kMergeHeadsProgram, in, msl_on_cpu()), 1e-5);
}

// LayerNorm and RMSNorm (cooperative: one group per row, a shared tree), rows longer than a group.
TEST(MslOnCpu, NormsAgreeWithCpu) {
  const char* ir = R"(graph @t(%x: f32[3,23,200], %g: f32[200], %b: f32[200]) {
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[3,23,200]
  %r = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[3,23,200]
  return %l, %r
}
)";
  std::mt19937 rng(13);
  NamedTensors in{{"x", uniform_f32(rng, {3, 23, 200}, 3.0f)},
                  {"g", uniform_f32(rng, {200}, 1.0f)},
                  {"b", uniform_f32(rng, {200}, 1.0f)}};
  expect_all_close(run_text(ir, in, cpu_target()), run_text(ir, in, msl_on_cpu()), 1e-5);
}

// A bad gather index is found by the kernel (the status buffer) and reported by the host.
TEST(MslOnCpu, BadGatherIndexIsReported) { metal::test::expect_bad_gather_reported(msl_on_cpu()); }

}  // namespace
}  // namespace rlx
