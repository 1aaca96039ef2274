// The metal target's cooperative reductions run in SIMD groups (sdk/src/dialect_msl.cpp:
// simd_sum, simd_max): the norms' row sums, the GEMV's partial products and a decode step's
// attention rows reduce in registers within each SIMD group, and only one value per SIMD group
// goes through a threadgroup array, so fewer threadgroup_barrier calls remain. These tests pin
// that on the emitted MSL (the barrier counts before the change are stated where they are
// compared) and run the same programs on the C++ stand-in (msl_on_cpu.h, whose simd_sum and
// simd_max give every lane of a 32-lane SIMD group the reduction of all 32) against the cpu
// target. LIR reduction loops of 32 or more elements run as one SIMD group per output (simd_sum,
// simd_max, simd_min, simd_product), short ones as one work-item's loop. What this cannot show:
// the GPU's reduction order or that Apple's compiler takes the text (docs/targets.md, metal).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "msl_on_cpu_api.h"
#include "rlx/core/half.h"
#include "rlx/core/runtime.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::cpu_target;
using test::expect_all_close;
using test::run_text;
using test::uniform_f32;

using metal::test::msl_on_cpu;

// How often `what` occurs in `text`.
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string emitted_msl(const std::string& ir) {
  test::Emitted emitted(ir, test::target_named("metal"));
  return emitted.text("metal_kernels.metal");
}

// LayerNorm over rows longer than a group and not a multiple of it (200), with scale and bias.
constexpr const char* kLayerNormProgram =
    R"(graph @t(%x: f32[3,23,200], %g: f32[200], %b: f32[200]) {
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[3,23,200]
  return %l
}
)";

// An attention layer at a decode step: the query projection and the output projection are
// GEMVs (m == 1), the attention has one query a head over 40 keys (more than a SIMD group, not a
// multiple of it), and a second attention has 3 queries over 5 keys (fewer keys than lanes: most
// lanes see none) under a causal mask and a padding mask that hides every key of batch 1 (a row
// that averages every value).
constexpr const char* kDecodeAttentionProgram =
    R"(graph @t(%x: f32[1,1,64], %wq: f32[64,64], %wo: f32[64,64], %k: f32[1,4,40,16], %v: f32[1,4,40,16], %q3: f32[2,2,3,8], %k3: f32[2,2,5,8], %v3: f32[2,2,5,8], %m3: i64[2,5]) {
  %qp = Linear(%x, %wq) : f32[1,1,64]
  %qs = reshape(%qp) {shape = [1, 1, 4, 16]} : f32[1,1,4,16]
  %q = transpose(%qs) {perm = [0, 2, 1, 3]} : f32[1,4,1,16]
  %o = Attention(%q, %k, %v) : f32[1,4,1,16]
  %t = transpose(%o) {perm = [0, 2, 1, 3]} : f32[1,1,4,16]
  %m = reshape(%t) {shape = [1, 1, 64]} : f32[1,1,64]
  %y = Linear(%m, %wo) : f32[1,1,64]
  %c = Attention(%q3, %k3, %v3) {mask = "causal"} : f32[2,2,3,8]
  %p = Attention(%q3, %k3, %v3, %m3) {mask = "padding"} : f32[2,2,3,8]
  return %y, %c, %p
}
)";

TEST(MslSimdgroup, LayerNormReducesInSimdGroups) {
  const std::string msl = emitted_msl(kLayerNormProgram);
  std::printf("LayerNorm: %d threadgroup_barrier, %d simd_sum\n",
              count(msl, "threadgroup_barrier("), count(msl, "simd_sum("));
  EXPECT_EQ(count(msl, "simd_sum("), 2) << msl;  // the mean's sum and the centred squares'
  EXPECT_NE(msl.find("[[thread_index_in_simdgroup]]"), std::string::npos) << msl;
  // Measured before the change: 4 (each statistic: a barrier after the 64 parts were written,
  // one before the array was written again). Now one per statistic.
  EXPECT_EQ(count(msl, "threadgroup_barrier("), 2) << msl;
  EXPECT_LT(count(msl, "threadgroup_barrier("), 4);

  std::mt19937 rng(13);
  NamedTensors in{{"x", uniform_f32(rng, {3, 23, 200}, 3.0f)},
                  {"g", uniform_f32(rng, {200}, 1.0f)},
                  {"b", uniform_f32(rng, {200}, 1.0f)}};
  expect_all_close(run_text(kLayerNormProgram, in, cpu_target()),
                   run_text(kLayerNormProgram, in, msl_on_cpu()), 1e-5);
}

TEST(MslSimdgroup, DecodeAttentionReducesInSimdGroups) {
  const std::string msl = emitted_msl(kDecodeAttentionProgram);
  std::printf("decode attention: %d threadgroup_barrier, %d simd_sum, %d simd_max\n",
              count(msl, "threadgroup_barrier("), count(msl, "simd_sum("), count(msl, "simd_max("));
  // Each attention merges its lanes' running maxima once.
  EXPECT_EQ(count(msl, "simd_max("), 3) << msl;
  EXPECT_GE(count(msl, "simd_sum("), 3) << msl;
  // Measured before the change: 14, all in the two GEMVs (a barrier after the parts were
  // written, then one per level of the 64-to-1 tree); the attentions' rows had none. Now one per
  // GEMV.
  EXPECT_EQ(count(msl, "threadgroup_barrier("), 2) << msl;
  EXPECT_LT(count(msl, "threadgroup_barrier("), 14);

  std::mt19937 rng(29);
  auto random = [&](std::vector<int64_t> shape, float bound) {
    return uniform_f32(rng, std::move(shape), bound);
  };
  Tensor mask(DType::kI64, {2, 5});
  auto* mp = static_cast<int64_t*>(mask.data());
  for (int j = 0; j < 5; ++j) mp[j] = j % 2, mp[5 + j] = 0;  // batch 1: every key hidden
  NamedTensors in{{"x", random({1, 1, 64}, 1.0f)},
                  {"wq", random({64, 64}, 0.5f)},
                  {"wo", random({64, 64}, 0.5f)},
                  {"k", random({1, 4, 40, 16}, 1.0f)},
                  {"v", random({1, 4, 40, 16}, 1.0f)},
                  {"q3", random({2, 2, 3, 8}, 1.0f)},
                  {"k3", random({2, 2, 5, 8}, 1.0f)},
                  {"v3", random({2, 2, 5, 8}, 1.0f)},
                  {"m3", mask}};
  expect_all_close(run_text(kDecodeAttentionProgram, in, cpu_target()),
                   run_text(kDecodeAttentionProgram, in, msl_on_cpu()), 1e-5);
}

// LIR reduction loops (not fused into a cooperative kernel): over 200 elements of the last dim
// (sum, max, min, prod), over 200 of a middle dim (f16 min, f32 sum: strided reads), a max and
// min over 100 with a NaN in one row (the lanes must keep it, which simd_max alone need not:
// the stand-in's passes NaN over, as fmax does), and over 5 elements, which stay one
// work-item's loop.
constexpr const char* kLoopReductionProgram =
    R"(graph @t(%x: f32[3,7,200], %w: f32[3,200], %y: f16[4,200,6], %u: f32[4,200,6], %q: f32[2,100], %z: f32[9,5]) {
  %s = reduce_sum(%x) {axes = [2]} : f32[3,7]
  %m = reduce_max(%x) {axes = [2]} : f32[3,7]
  %n = reduce_min(%x) {axes = [2]} : f32[3,7]
  %p = reduce_prod(%w) {axes = [1]} : f32[3]
  %ym = reduce_min(%y) {axes = [1]} : f16[4,6]
  %us = reduce_sum(%u) {axes = [1]} : f32[4,6]
  %qm = reduce_max(%q) {axes = [1]} : f32[2]
  %qn = reduce_min(%q) {axes = [1]} : f32[2]
  %zs = reduce_sum(%z) {axes = [1]} : f32[9]
  %zm = reduce_max(%z) {axes = [1]} : f32[9]
  return %s, %m, %n, %p, %ym, %us, %qm, %qn, %zs, %zm
}
)";

// The emitted kernels by their header comment ("// name: domain [...], ..."), each with its text.
std::vector<std::pair<std::string, std::string>> kernels_by_header(const std::string& msl) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t at = msl.find("\n// "); at != std::string::npos;) {
    const size_t end = msl.find("\n// ", at + 1);
    const std::string text = msl.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    out.emplace_back(text.substr(0, text.find('\n')), text);
    at = end;
  }
  return out;
}

TEST(MslSimdgroup, LoopReductionsRunAsSimdGroups) {
  const std::string msl = emitted_msl(kLoopReductionProgram);
  int simd_kernels = 0, serial_kernels = 0;
  for (const auto& [header, text] : kernels_by_header(msl)) {
    if (header.find(", reduce ") == std::string::npos) continue;
    const std::string op = header.substr(header.find(", reduce ") + 9, 4);
    const bool small = header.find("domain [9, 5]") != std::string::npos;
    const std::string fn = op.starts_with("sum")   ? "simd_sum("
                           : op.starts_with("max") ? "simd_max("
                           : op.starts_with("min") ? "simd_min("
                                                   : "simd_product(";
    if (small) {
      ++serial_kernels;  // 5 elements: one work-item's loop, no SIMD-group function
      EXPECT_EQ(text.find("simd_"), std::string::npos) << text;
      EXPECT_NE(text.find("for (long i1 = 0; i1 < 5; ++i1)"), std::string::npos) << text;
      continue;
    }
    ++simd_kernels;
    EXPECT_NE(text.find(fn), std::string::npos) << text;
    EXPECT_NE(text.find("r += 32"), std::string::npos) << text;  // lanes stride over the row
    EXPECT_NE(text.find("if (rlx_lane == 0) {"), std::string::npos) << text;
    EXPECT_NE(text.find("[[simdgroup_index_in_threadgroup]]"), std::string::npos) << text;
  }
  // One kernel per reduction unless two of one op over one input fused (they would share it).
  EXPECT_GE(simd_kernels, 6) << msl;
  EXPECT_GE(serial_kernels, 1) << msl;
  std::printf("loop reductions: %d in SIMD groups, %d serial\n", simd_kernels, serial_kernels);

  std::mt19937 rng(31);
  Tensor w = uniform_f32(rng, {3, 200}, 1.0f);
  for (int64_t i = 0; i < w.numel(); ++i)  // near 1, so the product of 200 stays finite
    static_cast<float*>(w.data())[i] = 1.0f + 0.05f * static_cast<float*>(w.data())[i];
  Tensor y(DType::kF16, {4, 200, 6});
  Tensor yf = uniform_f32(rng, {4, 200, 6}, 2.0f);
  for (int64_t i = 0; i < y.numel(); ++i)
    static_cast<uint16_t*>(y.data())[i] = f32_to_f16(static_cast<float*>(yf.data())[i]);
  Tensor q = uniform_f32(rng, {2, 100}, 1.0f);
  static_cast<float*>(q.data())[37] = std::numeric_limits<float>::quiet_NaN();  // row 0
  NamedTensors in{
      {"x", uniform_f32(rng, {3, 7, 200}, 1.0f)}, {"w", w}, {"y", y},
      {"u", uniform_f32(rng, {4, 200, 6}, 1.0f)}, {"q", q}, {"z", uniform_f32(rng, {9, 5}, 1.0f)}};
  const NamedTensors want = run_text(kLoopReductionProgram, in, cpu_target());
  const NamedTensors got = run_text(kLoopReductionProgram, in, msl_on_cpu());
  expect_all_close(want, got, 1e-5);
  for (const char* name : {"qm", "qn"}) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(std::isnan(static_cast<const float*>(got.at(name).data())[0])) << name;
    EXPECT_FALSE(std::isnan(static_cast<const float*>(got.at(name).data())[1])) << name;
  }
}

}  // namespace
}  // namespace rlx
