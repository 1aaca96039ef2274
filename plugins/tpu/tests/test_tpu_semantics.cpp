// Where XLA's semantics differ from rlx's (docs/ir.md), the emitted StableHLO must give rlx's:
// values by hand, run on the PJRT plugin of the suite (skipped with the suite when there is none).
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace rlx::test {
namespace {

NamedTensors run_on_tpu(const char* ir, const NamedTensors& in) {
  return run_text(ir, in, target_named("tpu"));
}

TEST(TpuSemantics, ReductionsPropagateNaN) {
  auto out = run_on_tpu(R"(graph @t(%x: f32[2,3]) {
  %hi = reduce_max(%x) {axes = [1]} : f32[2]
  %lo = reduce_min(%x) {axes = [1]} : f32[2]
  return %hi, %lo
}
)",
                        {{"x", f32({2, 3}, {1, NAN, 2, 3, 4, 5})}});
  std::vector<double> hi = values(out.at("hi")), lo = values(out.at("lo"));
  EXPECT_TRUE(std::isnan(hi[0]));
  EXPECT_EQ(hi[1], 5);
  EXPECT_TRUE(std::isnan(lo[0]));
  EXPECT_EQ(lo[1], 3);
}

// Float -> integer truncates, saturates at the i64 range, maps NaN to 0, then wraps to the width.
TEST(TpuSemantics, FloatToNarrowIntegerSaturatesAtTheDestination) {
  auto out = run_on_tpu(R"(graph @t(%x: f32[5]) {
  %i = convert(%x) {dtype = i32} : i32[5]
  %u = convert(%x) {dtype = u8} : u8[5]
  return %i, %u
}
)",
                        {{"x", f32({5}, {3e9f, NAN, -1.5f, 1e30f, 2.9f})}});
  // Clamped at the destination's range (decision 58), NaN to 0, truncated toward zero.
  EXPECT_EQ(values(out.at("i")), (std::vector<double>{2147483647.0, 0, -1, 2147483647.0, 2}));
  EXPECT_EQ(values(out.at("u")), (std::vector<double>{255, 0, 0, 255, 2}));
}

}  // namespace
}  // namespace rlx::test
