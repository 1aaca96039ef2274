// The int8 arithmetic of rlx_cm_int8.h (sdk/int8) against the rule docs/decisions.md states,
// computed here another way: exact 128-bit integers for the requantization, and a plain
// per-element loop for SMLAD-shaped dot products.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "int8_program.h"

extern "C" {
#include "rlx_cm_int8.h"
}

namespace {

using rlx::int8::to_fixed_point;

// floor(acc * m / 2^r + 1/2) + zero, clamped: the stated rounding (half toward +infinity).
int reference_requantize(int32_t acc, int32_t m, int r, int zero, int lo, int hi) {
  __int128 num = static_cast<__int128>(acc) * m * 2 + (static_cast<__int128>(1) << r);
  __int128 den = static_cast<__int128>(1) << (r + 1);
  __int128 q = num / den;
  if (num % den != 0 && num < 0) q -= 1;  // floor, not truncation
  q += zero;
  return static_cast<int>(std::clamp<__int128>(q, lo, hi));
}

TEST(CortexmSemantics, RequantizeRoundsHalfUpAndSaturates) {
  std::mt19937 gen(7);
  for (int i = 0; i < 200000; ++i) {
    const int32_t acc = static_cast<int32_t>(gen());
    const int32_t m = static_cast<int32_t>((1u << 30) + (gen() >> 2));
    const int r = 1 + static_cast<int>(gen() % 62);
    const int zero = static_cast<int>(gen() % 256) - 128;
    const int lo = i % 2 ? zero : -128;
    ASSERT_EQ(rlx_cm_requantize(acc, m, r, zero, lo, 127),
              reference_requantize(acc, m, r, zero, lo, 127))
        << acc << " " << m << " " << r;
  }
  // Ties: 3 * 2^30 / 2^31 = 1.5 -> 2 and -1.5 -> -1 (toward +infinity), by hand.
  EXPECT_EQ(rlx_cm_requantize(3, 1 << 30, 31, 0, -128, 127), 2);
  EXPECT_EQ(rlx_cm_requantize(-3, 1 << 30, 31, 0, -128, 127), -1);
  EXPECT_EQ(rlx_cm_requantize(1000000, 1 << 30, 31, 0, -128, 127), 127);
  EXPECT_EQ(rlx_cm_requantize(-1000000, 1 << 30, 31, 5, 5, 127), 5);
}

TEST(CortexmSemantics, FixedPointMultipliersAreWithinHalfAnUlpOf31Bits) {
  for (double real : {1.0, 0.5, 0.999999999, 3.7e-5, 1.25e-9, 123.456, 0.0078125}) {
    auto f = to_fixed_point(real, "test");
    EXPECT_GE(f.m, 1 << 30);
    EXPECT_LE(std::fabs(std::ldexp(static_cast<double>(f.m), -f.r) - real),
              std::ldexp(real, -31) + 1e-300)
        << real;
  }
  EXPECT_THROW(to_fixed_point(0.0, "zero"), std::exception);
  EXPECT_THROW(to_fixed_point(1e-30, "tiny"), std::exception);
}

TEST(CortexmSemantics, DotProductOfEveryLength) {
  std::mt19937 gen(3);
  for (int k = 0; k < 70; ++k) {
    std::vector<int8_t> x(k), w(k);
    int32_t want = 0;
    for (int i = 0; i < k; ++i) {
      x[i] = static_cast<int8_t>(static_cast<int>(gen() % 256) - 128);
      w[i] = static_cast<int8_t>(static_cast<int>(gen() % 255) - 127);
      want += x[i] * w[i];
    }
    EXPECT_EQ(rlx_cm_dot_s8(x.data(), w.data(), k), want) << k;
  }
}

}  // namespace
