// Where MLX's semantics differ from rlx's (docs/ir.md), the graph the mlx target builds must
// give rlx's: values by hand, run by MLX.
#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace rlx::test {
namespace {

template <typename T>
Tensor ints(DType d, std::vector<T> v) {
  Tensor t(d, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.as<T>()[i] = v[i];
  return t;
}
Tensor i32(std::vector<int32_t> v) {
  return ints(DType::kI32, std::move(v));
}
Tensor i64(std::vector<int64_t> v) {
  return ints(DType::kI64, std::move(v));
}

NamedTensors run_on_mlx(const char* ir, const NamedTensors& in) {
  return run_text(ir, in, target_named("mlx"));
}

// MLX's remainder takes the divisor's sign and its integer division floors; rlx truncates (C).
TEST(MlxSemantics, DivisionTruncatesAndRemainderTakesTheDividendsSign) {
  auto out = run_on_mlx(R"(graph @t(%a: i32[4], %b: i32[4], %x: f32[2], %y: f32[2]) {
  %q = div(%a, %b) : i32[4]
  %r = rem(%a, %b) : i32[4]
  %f = rem(%x, %y) : f32[2]
  return %q, %r, %f
}
)",
                        {{"a", i32({-7, 7, 7, 5})},
                         {"b", i32({2, -2, 0, 5})},
                         {"x", f32({2}, {-7.5f, 7.5f})},
                         {"y", f32({2}, {2.0f, -2.0f})}});
  EXPECT_EQ(values(out.at("q")), (std::vector<double>{-3, -3, 0, 1}));
  EXPECT_EQ(values(out.at("r")), (std::vector<double>{-1, 1, 0, 0}));
  EXPECT_EQ(values(out.at("f")), (std::vector<double>{-1.5, 1.5}));
}

// Float -> integer truncates, saturates at the destination's range and maps NaN to 0.
TEST(MlxSemantics, FloatToNarrowIntegerSaturatesAtTheDestination) {
  auto out = run_on_mlx(R"(graph @t(%x: f32[5]) {
  %i = convert(%x) {dtype = i32} : i32[5]
  %u = convert(%x) {dtype = u8} : u8[5]
  return %i, %u
}
)",
                        {{"x", f32({5}, {3e9f, NAN, -1.5f, 1e30f, 2.9f})}});
  EXPECT_EQ(values(out.at("i")), (std::vector<double>{2147483647.0, 0, -1, 2147483647.0, 2}));
  EXPECT_EQ(values(out.at("u")), (std::vector<double>{255, 0, 0, 255, 2}));
}

TEST(MlxSemantics, OutOfRangeGatherIndexIsAnError) {
  try {
    run_on_mlx(R"(graph @t(%x: f32[3], %i: i64[2]) {
  %g = gather(%x, %i) {axis = 0} : f32[2]
  return %g
}
)",
               {{"x", f32({3}, {1, 2, 3})}, {"i", i64({-1, 3})}});
    FAIL() << "expected an index error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("index 3 (at position 1 of the indices) is out of range"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx::test
