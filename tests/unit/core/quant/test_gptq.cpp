// GPTQ's int4 groups (rlx/core/quantize.h) against plain rounding: the same bytes where the
// activations' Gram matrix is diagonal (nothing to compensate), and a smaller error of the
// product X W^T, computed here from the dequantized weights, where the activations correlate.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "rlx/core/quantize.h"

namespace rlx::quant {
namespace {

struct Int4 {
  std::vector<uint8_t> packed, zero;
  std::vector<float> scale;
  Int4(int64_t n, int64_t k, int64_t group)
      : packed(static_cast<size_t>(n * k / 2)),
        zero(static_cast<size_t>(n * k / group)),
        scale(static_cast<size_t>(n * k / group)) {}
  // w[r, c] as the file gives it back: s * (q - z).
  double at(int64_t r, int64_t c, int64_t k, int64_t group) const {
    const int64_t e = r * k + c, g = r * (k / group) + c / group;
    const int q = e % 2 ? packed[e / 2] >> 4 : packed[e / 2] & 0xF;
    return static_cast<double>(scale[g]) * (q - zero[g]);
  }
};

std::vector<float> random_weights(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = normal(rng);
  return w;
}

TEST(Gptq, ADiagonalGramMatrixRoundsLikePlainGroups) {
  const int64_t n = 8, k = 64, group = 32;
  const std::vector<float> w = random_weights(n, k, 1);
  std::vector<double> gram(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) gram[i * k + i] = 1.0 + static_cast<double>(i % 5);
  gram[3 * k + 3] = 0;  // an input never seen
  Int4 plain(n, k, group), gptq(n, k, group);
  quantize_int4_groups(w.data(), n, k, group, plain.packed.data(), plain.scale.data(),
                       plain.zero.data());
  quantize_int4_groups_gptq(w.data(), n, k, group, gram.data(), gptq.packed.data(),
                            gptq.scale.data(), gptq.zero.data());
  EXPECT_EQ(gptq.packed, plain.packed);
  EXPECT_EQ(gptq.scale, plain.scale);
  EXPECT_EQ(gptq.zero, plain.zero);
}

TEST(Gptq, CorrelatedActivationsGetASmallerProductError) {
  const int64_t n = 24, k = 128, group = 32, rows = 512;
  const std::vector<float> w = random_weights(n, k, 2);
  // Activations from 8 latent factors plus a little noise: strongly correlated columns, as a
  // transformer's hidden states are.
  std::mt19937 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> mix(8 * k), x(static_cast<size_t>(rows * k));
  for (double& v : mix) v = normal(rng);
  for (int64_t r = 0; r < rows; ++r) {
    double f[8];
    for (double& v : f) v = normal(rng);
    for (int64_t c = 0; c < k; ++c) {
      double v = 0.1 * normal(rng);
      for (int j = 0; j < 8; ++j) v += f[j] * mix[j * k + c];
      x[r * k + c] = v;
    }
  }
  std::vector<double> gram(static_cast<size_t>(k * k), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) gram[i * k + j] += x[r * k + i] * x[r * k + j];
  Int4 plain(n, k, group), gptq(n, k, group);
  quantize_int4_groups(w.data(), n, k, group, plain.packed.data(), plain.scale.data(),
                       plain.zero.data());
  quantize_int4_groups_gptq(w.data(), n, k, group, gram.data(), gptq.packed.data(),
                            gptq.scale.data(), gptq.zero.data());
  // sum over rows and outputs of (x . (w - w_q))^2, for each.
  auto product_error = [&](const Int4& q) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < n; ++o) {
        double d = 0;
        for (int64_t c = 0; c < k; ++c) d += x[r * k + c] * (w[o * k + c] - q.at(o, c, k, group));
        total += d * d;
      }
    return total;
  };
  const double e_plain = product_error(plain), e_gptq = product_error(gptq);
  EXPECT_LT(e_gptq, 0.5 * e_plain) << "plain " << e_plain << ", gptq " << e_gptq;
}

}  // namespace
}  // namespace rlx::quant

namespace rlx::quant {
namespace {

// X^T X summed by add_gram against the plain double loop: the same bits (each entry adds its
// rows in order), both triangles, at sizes that leave partial blocks of its threads' rows; and a
// second call adds to the first.
TEST(Gptq, GramMatrixIsXTransposeX) {
  for (const int64_t k : {1, 5, 17, 37, 64}) {
    const int64_t rows = 45;
    std::mt19937 rng(static_cast<uint32_t>(k));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(rows * k));
    for (float& v : x) v = normal(rng);
    std::vector<double> want(static_cast<size_t>(k * k), 0.0), got(want.size(), 0.0);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j)
        for (int64_t r = 0; r < rows; ++r)
          want[i * k + j] += static_cast<double>(x[r * k + i]) * static_cast<double>(x[r * k + j]);
    add_gram(x.data(), rows, k, got.data());
    EXPECT_EQ(got, want) << "k " << k;
    add_gram(x.data(), rows, k, got.data());
    for (size_t e = 0; e < want.size(); ++e)
      ASSERT_NEAR(got[e], 2 * want[e], 1e-12 * (1 + std::fabs(want[e]))) << "k " << k;
  }
}

}  // namespace
}  // namespace rlx::quant
