// The bf16 GEMM (src/gemm_bf16*.cpp) on each unit this CPU has (AMX tiles, AVX512-BF16) against a
// double-precision product of the same bf16 values, on shapes with row and column remainders, a
// strided A, a transposed B, a fused epilogue and both result types; a unit the CPU lacks is
// skipped, saying why.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gemm_bf16.h"
#include "rlx/core/half.h"

namespace rlx::cpu {
namespace {

std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_bf16(d(rng));
  return v;
}

class Bf16Gemm : public ::testing::TestWithParam<Bf16Unit> {
 protected:
  void SetUp() override {
    if (GetParam() == Bf16Unit::kAmx && !amx_bf16_enabled())
      GTEST_SKIP() << "this CPU lacks AMX-BF16, the kernel did not grant the tile state, or "
                      "RLX_CPU_AMX_BF16=0";
    if (GetParam() == Bf16Unit::kAvx512Bf16 && !avx512_bf16_enabled())
      GTEST_SKIP() << "this CPU lacks AVX512-BF16, or RLX_CPU_AVX512_BF16=0";
  }
};

TEST_P(Bf16Gemm, MatchesTheDoubleProductOfTheSameValues) {
  const int64_t shapes[][3] = {{1, 1, 32},   {17, 33, 64}, {33, 16, 32},
                               {40, 50, 96}, {7, 70, 32},  {128, 384, 384}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2], lda = K + 8;  // A's rows padded: a stride
    for (const bool transposed_b : {false, true}) {
      const std::vector<uint16_t> a = random_bf16(static_cast<size_t>(M * lda), seed++);
      const std::vector<uint16_t> b = random_bf16(static_cast<size_t>(K * N), seed++);
      // B [K, N] as a view: row-major, or the columns of a row-major [N, K] (Linear's weight).
      const MatView bv = transposed_b ? MatView{b.data(), DType::kBF16, 1, K}
                                      : MatView{b.data(), DType::kBF16, N, 1};
      const PackedBf16B packed = pack_bf16_b(bv, K, N);
      const MatView av{a.data(), DType::kBF16, lda, 1};
      ASSERT_TRUE(bf16_gemm_takes(av, K));
      std::vector<float> bias(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n) bias[n] = 0.25f * static_cast<float>(n % 7);
      const GemmEpilogue ep =
          GemmEpilogue::bias_gelu_residual(bias.data(), GemmEpilogue::Gelu::kNone, nullptr, 0);
      std::vector<float> c(static_cast<size_t>(M * N), -7.0f);
      bf16_gemm(GetParam(), av, M, packed, &ep, DType::kF32, c.data(), N);
      std::vector<uint16_t> c16(static_cast<size_t>(M * N), 0);
      bf16_gemm(GetParam(), av, M, packed, &ep, DType::kBF16, c16.data(), N);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = bias[n], mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double bk = bf16_to_f32(transposed_b ? b[n * K + k] : b[k * N + n]);
            const double t = static_cast<double>(bf16_to_f32(a[m * lda + k])) * bk;
            want += t, mag += std::fabs(t);
          }
          // f32 sums of exact products: a few ulps of the magnitudes summed.
          const double got = c[m * N + n];
          ASSERT_NEAR(got, want, 1e-6 * mag + 1e-6)
              << "M " << M << " N " << N << " K " << K << " at " << m << ", " << n;
          ASSERT_EQ(c16[m * N + n], f32_to_bf16(c[m * N + n]))
              << "the bf16 result is the f32 one rounded";
        }
    }
  }
}

// A bf16 Linear's bias: the product rounded to bf16, the bias added in f32, the sum rounded again.
TEST_P(Bf16Gemm, AddsABf16BiasAfterRoundingTheProduct) {
  const int64_t M = 19, N = 40, K = 64;
  const std::vector<uint16_t> a = random_bf16(static_cast<size_t>(M * K), 11);
  const std::vector<uint16_t> b = random_bf16(static_cast<size_t>(K * N), 12);
  const std::vector<uint16_t> bias = random_bf16(static_cast<size_t>(N), 13);
  const PackedBf16B packed = pack_bf16_b(MatView{b.data(), DType::kBF16, N, 1}, K, N);
  const MatView av{a.data(), DType::kBF16, K, 1};
  std::vector<float> c(static_cast<size_t>(M * N));
  bf16_gemm(GetParam(), av, M, packed, nullptr, DType::kF32, c.data(), N);
  std::vector<uint16_t> c16(static_cast<size_t>(M * N));
  bf16_gemm(GetParam(), av, M, packed, nullptr, DType::kBF16, c16.data(), N, bias.data());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float rounded = bf16_to_f32(f32_to_bf16(c[m * N + n]));
      ASSERT_EQ(c16[m * N + n], f32_to_bf16(rounded + bf16_to_f32(bias[n]))) << m << ", " << n;
    }
}

INSTANTIATE_TEST_SUITE_P(Units, Bf16Gemm, ::testing::Values(Bf16Unit::kAmx, Bf16Unit::kAvx512Bf16),
                         [](const ::testing::TestParamInfo<Bf16Unit>& info) {
                           return info.param == Bf16Unit::kAmx ? "Amx" : "Avx512Bf16";
                         });

TEST(Bf16GemmTakes, OnlyContiguousRowsOfWholeTiles) {
  EXPECT_FALSE(bf16_gemm_takes(MatView{nullptr, DType::kBF16, 48, 1}, 48));  // K not 32k
  EXPECT_FALSE(bf16_gemm_takes(MatView{nullptr, DType::kBF16, 1, 64}, 64));  // columns strided
  EXPECT_FALSE(bf16_gemm_takes(MatView{nullptr, DType::kF32, 64, 1}, 64));   // not bf16
  EXPECT_TRUE(bf16_gemm_takes(MatView{nullptr, DType::kBF16, 100, 1}, 64));
}

}  // namespace
}  // namespace rlx::cpu
