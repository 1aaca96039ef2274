// The bf16 AMX GEMM (src/gemm_amx_bf16.cpp) against a double-precision product of the same bf16
// values, on shapes with row and column remainders, a strided A, a transposed B, a fused
// epilogue and both result types; skipped, saying why, on a CPU without AMX-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gemm_amx_bf16.h"
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

class AmxBf16Gemm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!amx_bf16_enabled())
      GTEST_SKIP() << "this CPU lacks AMX-BF16, the kernel did not grant the tile state, or "
                      "RLX_CPU_AMX_BF16=0";
  }
};

TEST_F(AmxBf16Gemm, MatchesTheDoubleProductOfTheSameValues) {
  const int64_t shapes[][3] = {
      {1, 1, 32}, {17, 33, 64}, {33, 16, 32}, {40, 50, 96}, {128, 384, 384}};
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
      ASSERT_TRUE(amx_bf16_takes(av, K));
      std::vector<float> bias(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n) bias[n] = 0.25f * static_cast<float>(n % 7);
      const GemmEpilogue ep =
          GemmEpilogue::bias_gelu_residual(bias.data(), GemmEpilogue::Gelu::kNone, nullptr, 0);
      std::vector<float> c(static_cast<size_t>(M * N), -7.0f);
      amx_bf16_gemm(av, M, packed, &ep, DType::kF32, c.data(), N);
      std::vector<uint16_t> c16(static_cast<size_t>(M * N), 0);
      amx_bf16_gemm(av, M, packed, &ep, DType::kBF16, c16.data(), N);
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

TEST_F(AmxBf16Gemm, TakesOnlyContiguousRowsOfWholeTiles) {
  EXPECT_FALSE(amx_bf16_takes(MatView{nullptr, DType::kBF16, 48, 1}, 48));  // K not 32k
  EXPECT_FALSE(amx_bf16_takes(MatView{nullptr, DType::kBF16, 1, 64}, 64));  // columns strided
  EXPECT_FALSE(amx_bf16_takes(MatView{nullptr, DType::kF32, 64, 1}, 64));   // not bf16
  EXPECT_TRUE(amx_bf16_takes(MatView{nullptr, DType::kBF16, 100, 1}, 64));
}

}  // namespace
}  // namespace rlx::cpu
