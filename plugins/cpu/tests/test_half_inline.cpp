// The inline 16-bit conversions of the GEMM and attention loops (src/half_inline.h): hand-worked
// values at each class's edges, then bit-for-bit agreement with rlx/core/half.h on every f16 and
// bf16 pattern and on a stride through every f32 pattern.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "half_inline.h"
#include "rlx/core/half.h"

namespace rlx::cpu {
namespace {

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

TEST(HalfInline, HandWorkedValues) {
  EXPECT_EQ(f16_widen_inline(0x3C00), 1.0f);
  EXPECT_EQ(f16_widen_inline(0xC000), -2.0f);
  EXPECT_EQ(f16_widen_inline(0x0001), 0x1p-24f);         // the smallest subnormal
  EXPECT_EQ(f16_widen_inline(0x03FF), 1023 * 0x1p-24f);  // the largest
  EXPECT_EQ(f16_widen_inline(0x7BFF), 65504.0f);
  EXPECT_EQ(bits(f16_widen_inline(0x7C00)), 0x7F800000u);
  EXPECT_EQ(bits(f16_widen_inline(0x8000)), 0x80000000u);
  EXPECT_EQ(f16_round_inline(1.0f), 0x3C00);
  EXPECT_EQ(f16_round_inline(65504.0f), 0x7BFF);
  EXPECT_EQ(f16_round_inline(65519.0f), 0x7BFF);  // below the midpoint to 2^16
  EXPECT_EQ(f16_round_inline(65520.0f), 0x7C00);  // the midpoint ties to even: inf
  EXPECT_EQ(f16_round_inline(0x1p-24f), 0x0001);
  EXPECT_EQ(f16_round_inline(0x1p-25f), 0x0000);    // half the smallest subnormal ties to 0
  EXPECT_EQ(f16_round_inline(0x1.8p-24f), 0x0002);  // 1.5 units ties to 2
  EXPECT_EQ(f16_round_inline(0x1.8p-23f), 0x0003);  // 3 units exactly
  EXPECT_EQ(f16_round_inline(-0x1p-14f), 0x8400);   // the smallest normal
  EXPECT_EQ(f16_round_inline(from_bits(0x7FC00001u)) & 0x7E00, 0x7E00);  // a NaN stays quiet
  EXPECT_EQ(bf16_round_inline(1.0f + 0x1p-8f), 0x3F80);                  // a tie to even (down)
  EXPECT_EQ(bf16_round_inline(1.0f + 0x3p-8f), 0x3F82);                  // a tie to even (up)
  EXPECT_EQ(bf16_round_inline(from_bits(0x7F800001u)), 0x7FC0);  // a payload in the low bits
  EXPECT_EQ(bf16_widen_inline(0x3F80), 1.0f);
}

TEST(HalfInline, AgreesWithCoreOnEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    ASSERT_EQ(bits(f16_widen_inline(h)), bits(f16_to_f32(h))) << std::hex << h;
    ASSERT_EQ(bits(bf16_widen_inline(h)), bits(bf16_to_f32(h))) << std::hex << h;
  }
  // Every 61st f32 pattern (an odd stride reaches every low-bit residue), about 70 million.
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += 61) {
    const float f = from_bits(static_cast<uint32_t>(x));
    ASSERT_EQ(f16_round_inline(f), f32_to_f16(f)) << std::hex << x;
    ASSERT_EQ(bf16_round_inline(f), f32_to_bf16(f)) << std::hex << x;
  }
}

}  // namespace
}  // namespace rlx::cpu
