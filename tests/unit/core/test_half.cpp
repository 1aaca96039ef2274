#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "rlx/core/half.h"

namespace rlx {
namespace {

float bits_f32(uint32_t b) {
  return std::bit_cast<float>(b);
}
uint32_t f32_bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

TEST(F16, DecodesNormalValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0xFBFF), -65504.0f);
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));
}

TEST(F16, DecodesSubnormalsAndZeros) {
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_bits(f16_to_f32(0x0000)), 0x00000000u);
  EXPECT_EQ(f32_bits(f16_to_f32(0x8000)), 0x80000000u);
}

TEST(F16, DecodesInfAndNaN) {
  EXPECT_EQ(f16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7C01)));
  EXPECT_EQ(f32_bits(f16_to_f32(0xFE00)), 0xFFC00000u);
}

TEST(F16, EncodesExactValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(0.1f), 0x2E66);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);
}

TEST(F16, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 0x3C00 and 0x3C01: the even one wins.
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 lies halfway between 0x3C01 and 0x3C02.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // A carry out of the mantissa moves to the next binade: 2 - 2^-12 rounds up to 2.
  EXPECT_EQ(f32_to_f16(2.0f - std::ldexp(1.0f, -12)), 0x4000);
}

TEST(F16, OverflowsToInfinityAtTheMidpointAbove65504) {
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // tie with 2^16; 0x7BFF is odd
  EXPECT_EQ(f32_to_f16(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e6f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(F16, EncodesSubnormals) {
  const float unit = std::ldexp(1.0f, -24);  // smallest f16 subnormal
  EXPECT_EQ(f32_to_f16(unit), 0x0001);
  EXPECT_EQ(f32_to_f16(unit / 2), 0x0000);  // tie with 0
  EXPECT_EQ(f32_to_f16(std::nextafter(unit / 2, 1.0f)), 0x0001);
  EXPECT_EQ(f32_to_f16(-unit / 2), 0x8000);
  EXPECT_EQ(f32_to_f16(1.5f * unit), 0x0002);  // tie between 1 and 2
  EXPECT_EQ(f32_to_f16(2.5f * unit), 0x0002);  // tie between 2 and 3
  EXPECT_EQ(f32_to_f16(1023 * unit), 0x03FF);
  EXPECT_EQ(f32_to_f16(1023.5f * unit), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(F16, KeepsNaNsNaN) {
  uint16_t h = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  // A payload only in the low float bits must not truncate to Inf.
  EXPECT_EQ(f32_to_f16(bits_f32(0x7F800001)), 0x7E00);
  EXPECT_EQ(f32_to_f16(bits_f32(0xFF800001)), 0xFE00);
}

TEST(F16, EveryValueRoundTripsThroughF32) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    uint16_t back = f32_to_f16(f);
    if (std::isnan(f))
      EXPECT_EQ(back, h | 0x0200) << std::hex << h;  // signalling NaNs come back quiet
    else
      EXPECT_EQ(back, h) << std::hex << h;
  }
}

TEST(F16, EveryMidpointRoundsToTheEvenNeighbour) {
  // Midpoints of adjacent f16 values are exact floats, so this checks every tie and the float
  // on either side of it.
  for (uint16_t a = 0; a < 0x7BFF; ++a) {
    auto b = static_cast<uint16_t>(a + 1);
    float mid = (f16_to_f32(a) + f16_to_f32(b)) / 2;
    uint16_t even = (a & 1) ? b : a;
    ASSERT_EQ(f32_to_f16(mid), even) << std::hex << a;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, 0.0f)), a) << std::hex << a;
    ASSERT_EQ(f32_to_f16(std::nextafter(mid, 1e9f)), b) << std::hex << a;
    ASSERT_EQ(f32_to_f16(-mid), even | 0x8000) << std::hex << a;
  }
}

TEST(BF16, Decodes) {
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bf16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(bf16_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_to_f32(0x0001), bits_f32(0x00010000));  // subnormal
  EXPECT_TRUE(std::isnan(bf16_to_f32(0x7FC0)));
}

TEST(BF16, RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(bits_f32(0x40490FDB)), 0x4049);  // pi
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F808000)), 0x3F80);  // tie, keeps even 0x3F80
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F818000)), 0x3F82);  // tie, rounds up to even
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F808001)), 0x3F81);  // just above the tie
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3F807FFF)), 0x3F80);  // just below the tie
  EXPECT_EQ(f32_to_bf16(bits_f32(0x3FFF8000)), 0x4000);  // carry into the exponent
}

TEST(BF16, HandlesOverflowSubnormalsZerosAndNaN) {
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to Inf
  EXPECT_EQ(f32_to_bf16(bits_f32(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(f32_to_bf16(bits_f32(0x00008000)), 0x0000);  // subnormal tie
  EXPECT_EQ(f32_to_bf16(bits_f32(0x00018000)), 0x0002);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(bits_f32(0x7F800001)), 0x7FC0);  // payload below bf16's bits
  EXPECT_EQ(f32_to_bf16(bits_f32(0xFFC00000)), 0xFFC0);
  EXPECT_EQ(f32_to_bf16(bits_f32(0x7FFFFFFF)), 0x7FFF);  // must not carry into the sign
}

TEST(BF16, EveryValueRoundTripsThroughF32) {
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = bf16_to_f32(static_cast<uint16_t>(b));
    uint16_t back = f32_to_bf16(f);
    if (std::isnan(f))
      EXPECT_EQ(back, b | 0x0040) << std::hex << b;
    else
      EXPECT_EQ(back, b) << std::hex << b;
  }
}

}  // namespace
}  // namespace rlx
