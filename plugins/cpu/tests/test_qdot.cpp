// The integer block products (src/qdot*.cpp) against a double-precision reference: weights
// decoded by quant::dequantize (itself checked against gguf-py in tests/unit), activations
// rounded by the documented rule written out again here, on every ISA this CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "qdot.h"
#include "rlx/core/half.h"

namespace rlx::cpu {
namespace {

using quant::QType;

// The byte offsets of each format's f16 scale fields: random bytes there could be Inf or NaN.
std::vector<int> f16_fields(QType t) {
  switch (t) {
    case QType::kQ4_1:
    case QType::kQ5_1:
    case QType::kQ4_K:
    case QType::kQ5_K:
    case QType::kQ2_K:
      return t == QType::kQ2_K ? std::vector<int>{80, 82} : std::vector<int>{0, 2};
    case QType::kQ6_K:
      return {208};
    case QType::kQ3_K:
      return {108};
    default:
      return {0};
  }
}

std::vector<uint8_t> random_rows(QType t, int64_t rows, int64_t k, std::mt19937& rng) {
  const quant::QTypeInfo& q = quant::info(t);
  std::vector<uint8_t> w(static_cast<size_t>(rows * *quant::row_bytes(t, k)));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
  for (size_t blk = 0; blk < w.size() / q.block_bytes; ++blk)
    for (int off : f16_fields(t)) {
      uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(w.data() + blk * q.block_bytes + off, &h, 2);
    }
  return w;
}

// d = max|x| / 127 per block, q = round-to-nearest-even(x * (1 / d)).
std::vector<double> rounded(const float* x, int64_t k, int64_t block) {
  std::vector<double> out(static_cast<size_t>(k));
  for (int64_t b = 0; b < k; b += block) {
    float amax = 0;
    for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
    for (int64_t i = 0; i < block; ++i)
      out[b + i] = static_cast<double>(d) * std::nearbyint(x[b + i] * id);
  }
  return out;
}

const QType kFormats[] = {QType::kQ4_0, QType::kQ4_1,   QType::kQ5_0, QType::kQ5_1,
                          QType::kQ8_0, QType::kIQ4_NL, QType::kQ4_K, QType::kQ5_K,
                          QType::kQ6_K, QType::kQ2_K,   QType::kQ3_K, QType::kIQ4_XS};

TEST(QDot, EveryFormatAndIsaMatchesTheRoundedReference) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (QDotIsa isa : {QDotIsa::kPortable, QDotIsa::kAvx512Vnni}) {
    if (!qdot_isa_supported(isa)) {
      std::printf("skipping %s: this CPU lacks it\n", qdot_isa_name(isa));
      continue;
    }
    set_qdot_isa(isa);
    for (QType t : kFormats) {
      const int64_t bs = quant::info(t).block_size, K = bs == 256 ? 768 : 320, N = 23;
      const int64_t rb = *quant::row_bytes(t, K);
      std::vector<uint8_t> w = random_rows(t, N, K, rng);
      for (int64_t M : {1, 3, 6}) {  // one row, a partial tile, a tile and a part
        std::vector<float> x(static_cast<size_t>(M * K));
        for (auto& v : x) v = normal(rng);
        x[5] = 40.f;  // an outlier: its block's other values round coarsely
        const auto stride = static_cast<int64_t>(qdot_act_row_bytes(t, K));
        std::vector<uint8_t> xq(static_cast<size_t>(M * stride));
        for (int64_t m = 0; m < M; ++m)
          qdot_quantize_row(t, x.data() + m * K, K, xq.data() + m * stride);
        std::vector<float> y(static_cast<size_t>(M * N), NAN);
        // Two calls over parts of [0, N), as threads split it.
        qdot_rows(t, w.data(), rb, 0, 9, xq.data(), stride, M, K, y.data(), N);
        qdot_rows(t, w.data(), rb, 9, N, xq.data(), stride, M, K, y.data(), N);
        std::vector<float> row(static_cast<size_t>(K));
        double worst = 0;
        for (int64_t m = 0; m < M; ++m) {
          std::vector<double> xr = rounded(x.data() + m * K, K, qdot_act_block(t));
          for (int64_t n = 0; n < N; ++n) {
            quant::dequantize(t, w.data() + n * rb, row.data(), K);
            double want = 0, mag = 0;
            for (int64_t i = 0; i < K; ++i) want += xr[i] * row[i], mag += std::abs(xr[i] * row[i]);
            worst = std::max(worst, std::abs(y[m * N + n] - want) / std::max(mag, 1e-30));
          }
        }
        EXPECT_LT(worst, 1e-6) << quant::info(t).name << " M=" << M << " " << qdot_isa_name(isa);
      }
    }
  }
}

// f32 activations: the weights decode in registers to quant::dequantize's values, so the
// reference is the double dot product of those with x itself.
TEST(QDot, F32ActivationsMatchDequantizeThenMultiply) {
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (QDotIsa isa : {QDotIsa::kPortable, QDotIsa::kAvx512Vnni}) {
    if (!qdot_isa_supported(isa)) {
      std::printf("skipping %s: this CPU lacks it\n", qdot_isa_name(isa));
      continue;
    }
    set_qdot_isa(isa);
    for (QType t : kFormats) {
      const int64_t bs = quant::info(t).block_size, K = bs == 256 ? 768 : 320, N = 21;
      const int64_t rb = *quant::row_bytes(t, K), ldx = K + 3;  // rows of x not packed
      std::vector<uint8_t> w = random_rows(t, N, K, rng);
      for (int64_t M : {1, 3, 6}) {
        std::vector<float> x(static_cast<size_t>(M * ldx));
        for (auto& v : x) v = normal(rng);
        std::vector<float> y(static_cast<size_t>(M * N), NAN);
        qdot_rows_f32(t, w.data(), rb, 0, 10, x.data(), ldx, M, K, y.data(), N);
        qdot_rows_f32(t, w.data(), rb, 10, N, x.data(), ldx, M, K, y.data(), N);
        std::vector<float> row(static_cast<size_t>(K));
        double worst = 0;
        for (int64_t n = 0; n < N; ++n) {
          quant::dequantize(t, w.data() + n * rb, row.data(), K);
          for (int64_t m = 0; m < M; ++m) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < K; ++i) {
              const double p = static_cast<double>(x[m * ldx + i]) * row[i];
              want += p, mag += std::abs(p);
            }
            worst = std::max(worst, std::abs(y[m * N + n] - want) / std::max(mag, 1e-30));
          }
        }
        EXPECT_LT(worst, 1e-6) << quant::info(t).name << " M=" << M << " " << qdot_isa_name(isa);
      }
    }
  }
}

// Prefill's weight tiles: decoded rows equal quant::dequantize's values exactly (zeros may
// differ in sign: d * (q - 8) is -0 for a negative d, fma(u, d, -8d) +0; a product cannot tell).
TEST(QDot, DecodedRowsEqualDequantize) {
  std::mt19937 rng(29);
  for (QDotIsa isa : {QDotIsa::kPortable, QDotIsa::kAvx512Vnni}) {
    if (!qdot_isa_supported(isa)) continue;
    set_qdot_isa(isa);
    for (QType t : kFormats) {
      const int64_t K = quant::info(t).block_size == 256 ? 512 : 96, N = 7, ldo = K + 5;
      const int64_t rb = *quant::row_bytes(t, K);
      std::vector<uint8_t> w = random_rows(t, N, K, rng);
      std::vector<float> got(static_cast<size_t>(N * ldo)), want(static_cast<size_t>(K));
      qdot_decode_rows(t, w.data(), rb, 2, N, K, got.data(), ldo);
      for (int64_t n = 2; n < N; ++n) {
        quant::dequantize(t, w.data() + n * rb, want.data(), K);
        int differ = 0;
        for (int64_t i = 0; i < K; ++i) differ += want[i] != got[(n - 2) * ldo + i];
        EXPECT_EQ(differ, 0) << quant::info(t).name << " row " << n << " " << qdot_isa_name(isa);
      }
    }
  }
}

TEST(QDot, ActivationBlocksFollowTheRoundingRule) {
  // One Q8_0-style block: max |x| = 2.54 gives d = 0.02; 1.0 rounds to 50, -0.011 to -1.
  std::vector<float> x(32, 0.f);
  x[0] = 2.54f, x[1] = 1.0f, x[2] = -0.011f, x[31] = -2.54f;
  QAct32 b{};
  qdot_quantize_row(QType::kQ8_0, x.data(), 32, &b);
  EXPECT_FLOAT_EQ(b.d, 0.02f);
  EXPECT_EQ(b.q[0], 127);
  EXPECT_EQ(b.q[1], 50);
  EXPECT_EQ(b.q[2], -1);
  EXPECT_EQ(b.q[31], -127);
  EXPECT_FLOAT_EQ(b.dsum, 0.02f * (127 + 50 - 1 - 127));
  // A Q8_K-style block keeps the sums of each 16.
  std::vector<float> z(256, 0.f);
  for (int i = 0; i < 256; ++i) z[i] = (i % 16 == 0) ? 1.0f : 0.0f;
  QAct256 k{};
  qdot_quantize_row(QType::kQ4_K, z.data(), 256, &k);
  EXPECT_FLOAT_EQ(k.d, 1.0f / 127);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(k.bsums[j], 127) << j;
}

TEST(QDot, AllZeroActivationsGiveZero) {
  std::mt19937 rng(3);
  const int64_t K = 256, rb = *quant::row_bytes(QType::kQ6_K, K);
  std::vector<uint8_t> w = random_rows(QType::kQ6_K, 2, K, rng);
  std::vector<float> x(K, 0.f);
  QAct256 xq{};
  qdot_quantize_row(QType::kQ6_K, x.data(), K, &xq);
  float y[2] = {NAN, NAN};
  qdot_rows(QType::kQ6_K, w.data(), rb, 0, 2, &xq, sizeof xq, 1, K, y, 2);
  EXPECT_EQ(y[0], 0.f);
  EXPECT_EQ(y[1], 0.f);
}

}  // namespace
}  // namespace rlx::cpu
