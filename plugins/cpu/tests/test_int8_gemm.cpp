// The int8 GEMM of QMatMul (src/int8_gemm*.cpp) on every ISA this CPU runs (AMX tiles where
// the CPU and kernel grant them, skipped with the reason elsewhere), against a
// double-precision reference that writes the documented arithmetic out again here
// (rlx/core/quantize.h): u8 activations per row, s8 weights per channel, exact integer sums.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "int8_gemm.h"
#include "rlx/core/quantize.h"

namespace rlx::cpu {
namespace {

struct Problem {
  int64_t M, N, K;
  std::vector<float> x, scale;
  std::vector<int8_t> w;
};

Problem random_problem(int64_t M, int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> val(0.3f, 1.5f);
  std::uniform_int_distribution<int> q(-127, 127);
  std::uniform_real_distribution<float> s(0.001f, 0.05f);
  Problem p{M, N, K, {}, {}, {}};
  for (int64_t i = 0; i < M * K; ++i) p.x.push_back(val(rng));
  for (int64_t i = 0; i < N * K; ++i) p.w.push_back(static_cast<int8_t>(q(rng)));
  for (int64_t i = 0; i < N; ++i) p.scale.push_back(s(rng));
  return p;
}

// Rounds row m of x to u8 the documented way, then sums in double.
std::vector<double> reference(const Problem& p) {
  std::vector<double> y(static_cast<size_t>(p.M * p.N));
  for (int64_t m = 0; m < p.M; ++m) {
    const float* row = p.x.data() + m * p.K;
    float lo = 0, hi = 0;
    for (int64_t k = 0; k < p.K; ++k) lo = std::min(lo, row[k]), hi = std::max(hi, row[k]);
    const float s = (hi - lo) / 255.0f;
    const float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 255.0f);
    std::vector<double> centered(static_cast<size_t>(p.K));
    for (int64_t k = 0; k < p.K; ++k)
      centered[k] = std::clamp(std::nearbyint(row[k] / s) + z, 0.0f, 255.0f) - z;
    for (int64_t n = 0; n < p.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < p.K; ++k) acc += centered[k] * p.w[n * p.K + k];
      y[m * p.N + n] = acc * s * p.scale[n];
    }
  }
  return y;
}

// Every row of p.x rounded on this thread into a fresh buffer (fixed parameters when given).
U8RowBuffer rounded_rows(const Problem& p, const PackedInt8W& w, const float* fixed_scale = nullptr,
                         const uint8_t* fixed_zero = nullptr) {
  U8RowBuffer rows;
  rows.ld = w.kp;
  rows.q.assign(static_cast<size_t>(p.M * w.kp), 0);
  rows.scale.resize(static_cast<size_t>(p.M));
  rows.zero.resize(static_cast<size_t>(p.M));
  quantize_rows_u8(p.x.data(), p.K, 0, p.M, p.K, fixed_scale, fixed_zero, rows);
  return rows;
}

std::vector<float> run(const Problem& p) {
  PackedInt8W w = pack_int8_weights(p.w.data(), p.scale.data(), nullptr, p.N, p.K);
  U8RowBuffer rows = rounded_rows(p, w);
  std::vector<float> y(static_cast<size_t>(p.M * p.N), -7.0f);
  int8_gemm(w, rows.rows(), p.M, y.data(), p.N);
  return y;
}

class Int8Gemm : public ::testing::TestWithParam<Int8Isa> {
 protected:
  void SetUp() override {
    if (!int8_isa_supported(GetParam()))
      GTEST_SKIP() << "this CPU lacks " << int8_isa_name(GetParam());
    saved_ = int8_isa();
    set_int8_isa(GetParam());
  }
  void TearDown() override {
    if (int8_isa_supported(GetParam())) set_int8_isa(saved_);
  }
  Int8Isa saved_ = Int8Isa::kPortable;
};

TEST_P(Int8Gemm, MatchesTheIntegerReferenceAtEveryEdge) {
  // Rows not a multiple of the register tile, columns not a multiple of 16 or 32, K not a
  // multiple of 4, and MiniLM's own shapes.
  const int64_t shapes[][3] = {{1, 1, 1},    {3, 17, 5},     {9, 33, 13},    {17, 48, 64},
                               {8, 16, 4},   {64, 384, 384}, {130, 1536, 384}, {7, 384, 1536}};
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    const Problem p = random_problem(s[0], s[1], s[2], seed++);
    const std::vector<double> want = reference(p);
    const std::vector<float> got = run(p);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      // The integer sum is exact; only the f32 scaling of it rounds.
      const double err = std::fabs(got[i] - want[i]) / (std::fabs(want[i]) + 1e-3);
      worst = std::max(worst, err);
    }
    EXPECT_LE(worst, 1e-5) << "M " << s[0] << " N " << s[1] << " K " << s[2] << " on "
                           << int8_isa_name(GetParam());
  }
}

TEST_P(Int8Gemm, StaticParametersAreUsedForEveryRow) {
  const Problem p = random_problem(5, 20, 24, 99);
  PackedInt8W w = pack_int8_weights(p.w.data(), p.scale.data(), nullptr, p.N, p.K);
  U8RowBuffer rows;
  rows.ld = w.kp;
  rows.q.assign(static_cast<size_t>(p.M * w.kp), 0);
  rows.scale.resize(5);
  rows.zero.resize(5);
  const float s = 0.05f;
  const uint8_t z = 100;
  quantize_rows_u8(p.x.data(), p.K, 0, p.M, p.K, &s, &z, rows);
  std::vector<float> y(static_cast<size_t>(p.M * p.N));
  int8_gemm(w, rows.rows(), p.M, y.data(), p.N);
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        const double q = std::clamp(std::nearbyint(p.x[m * p.K + k] / s) + z, 0.0f, 255.0f);
        acc += (q - z) * p.w[n * p.K + k];
      }
      const double want = acc * s * p.scale[n];
      EXPECT_NEAR(y[m * p.N + n], want, 1e-5 * (std::fabs(want) + 1e-3));
    }
  // Rows marked as rounded with one given scale and zero point take those, not any row's own
  // entry: int8_matmul_f32 rounds rows block by block in the tasks that multiply them, so a
  // block may run before row 0's entry is written (a race a release build once lost).
  rows.uniform = true, rows.uniform_scale = s, rows.uniform_zero = z;
  rows.scale.assign(5, 7.0f);
  rows.zero.assign(5, 3);
  std::vector<float> uniform(y.size());
  int8_gemm(w, rows.rows(), p.M, uniform.data(), p.N);
  EXPECT_EQ(0, std::memcmp(uniform.data(), y.data(), y.size() * sizeof(float)));
}

// int8_matmul_f32 rounds each block of rows in the task that multiplies it, and splits the
// panels of a block too when the rows are few for the threads: both splits, at sizes that are
// not multiples of the blocks, tiles or 4, give the very bytes of the separate steps run on one
// thread (the integer sums are exact), and the tile sink sees every element once.
TEST_P(Int8Gemm, FusedRoundingAndSplitsEqualTheSeparateSteps) {
  const int64_t shapes[][3] = {{1, 1, 1},       {3, 17, 5},    {9, 33, 13},  {31, 50, 7},
                               {130, 100, 383}, {200, 36, 18}, {65, 161, 6}, {8, 16, 4}};
  uint32_t seed = 40;
  for (const auto& s : shapes) {
    const Problem p = random_problem(s[0], s[1], s[2], seed++);
    PackedInt8W w = pack_int8_weights(p.w.data(), p.scale.data(), p.scale.data(), p.N, p.K);
    for (int fixed = 0; fixed < 2; ++fixed) {
      const float fs = 0.02f;
      const uint8_t fz = 120;
      const float* xs = fixed ? &fs : nullptr;
      const uint8_t* xz = fixed ? &fz : nullptr;
      // The separate steps on one thread: all rows rounded, then one block of everything.
      U8RowBuffer want_rows = rounded_rows(p, w, xs, xz);
      std::vector<float> want(static_cast<size_t>(p.M * p.N), -7.0f);
      int8_gemm_block(w, want_rows.rows(), 0, p.M, 0, w.panels, want.data(), p.N);
      for (int threads : {1, 2, 3, 8}) {
        tbb::task_arena arena(threads);
        arena.execute([&] {
          const std::string where = "M " + std::to_string(p.M) + " N " + std::to_string(p.N) +
                                    " K " + std::to_string(p.K) + " fixed " +
                                    std::to_string(fixed) + " threads " + std::to_string(threads) +
                                    " on " + int8_isa_name(GetParam());
          // A reused buffer holds stale bytes: the rounding must clear the padding itself.
          U8RowBuffer rows;
          rows.q.assign(static_cast<size_t>(p.M * w.kp + 64), 0xFF);
          std::vector<float> got(static_cast<size_t>(p.M * p.N), -7.0f);
          int8_matmul_f32(w, p.x.data(), p.K, p.M, xs, xz, rows, got.data(), p.N);
          EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << where;

          std::vector<float> sunk(static_cast<size_t>(p.M * p.N), -7.0f);
          std::vector<int> seen(static_cast<size_t>(p.M * p.N), 0);
          const Int8TileSink sink = [&](float* t, int64_t ld, int64_t m0, int64_t n0,
                                        int64_t rows_n, int64_t cols) {
            for (int64_t r = 0; r < rows_n; ++r)
              for (int64_t c = 0; c < cols; ++c) {
                sunk[(m0 + r) * p.N + n0 + c] = t[r * ld + c];
                ++seen[(m0 + r) * p.N + n0 + c];
              }
          };
          int8_matmul_f32(w, p.x.data(), p.K, p.M, xs, xz, rows, nullptr, 0, &sink);
          EXPECT_EQ(0, std::memcmp(sunk.data(), want.data(), sunk.size() * sizeof(float)))
              << where << " through the sink";
          EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
              << where << " through the sink";

          // In place: each tile comes at its own place in y, once, already holding the result.
          std::vector<float> in_y(static_cast<size_t>(p.M * p.N), -7.0f);
          std::fill(seen.begin(), seen.end(), 0);
          bool at_place = true;
          const Int8TileSink at_y = [&](float* t, int64_t ld, int64_t m0, int64_t n0,
                                        int64_t rows_n, int64_t cols) {
            at_place = at_place && ld == p.N && t == in_y.data() + m0 * p.N + n0;
            for (int64_t r = 0; r < rows_n; ++r)
              for (int64_t c = 0; c < cols; ++c) ++seen[(m0 + r) * p.N + n0 + c];
          };
          int8_matmul_f32(w, p.x.data(), p.K, p.M, xs, xz, rows, in_y.data(), p.N, &at_y,
                          Int8SinkAt::kResult);
          EXPECT_TRUE(at_place) << where << " in place";
          EXPECT_EQ(0, std::memcmp(in_y.data(), want.data(), in_y.size() * sizeof(float)))
              << where << " in place";
          EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }))
              << where << " in place";
        });
      }
    }
  }
}

// The vector rounding multiplies by 1 / scale and divides only near a half-integer: quotients
// a few ulps either side of every half-integer (and on it: ties go to even), at scales whose
// reciprocal is inexact, give the bytes of the scalar division rule.
// Values a few ulps either side of every tie (where the vector kernels' product by 1 / s must
// hand over to the division), random values of every magnitude, infinities and NaN; scales
// whose inverse is inexact, exact, or not a normal number (a denormal scale, a huge one).
TEST_P(Int8Gemm, RoundingNearHalfIntegersGivesTheScalarRulesBytes) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> power(-30, 12);
  for (const float scale : {0.1f, 0.0137f, 3.3f, 1e-3f / 7, 1.0f, 0.25f, 1e-39f, 1e38f}) {
    std::vector<float> x;
    for (int h = -130; h <= 130; ++h)
      for (int ulps = -8; ulps <= 8; ++ulps) {
        float v = (static_cast<float>(h) + 0.5f) * scale;
        for (int u = 0; u < std::abs(ulps); ++u) v = std::nextafter(v, ulps > 0 ? 1e30f : -1e30f);
        x.push_back(v);
      }
    for (int i = 0; i < 4000; ++i) x.push_back(std::ldexp(unit(rng), power(rng)) * scale);
    for (float special : {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 3e38f, -3e38f})
      x.push_back(special);
    const int64_t k = static_cast<int64_t>(x.size());
    const uint8_t zero = 128;
    std::vector<uint8_t> want(static_cast<size_t>(k));
    quant::quantize_u8(x.data(), k, quant::U8Params{scale, zero}, want.data());
    U8RowBuffer rows;
    rows.ld = (k + 63) / 64 * 64;
    rows.q.assign(static_cast<size_t>(rows.ld), 0);
    rows.scale.resize(1);
    rows.zero.resize(1);
    quantize_rows_u8(x.data(), k, 0, 1, k, &scale, &zero, rows);
    for (int64_t i = 0; i < k; ++i)
      ASSERT_EQ(rows.q[i], want[i])
          << "x " << x[i] << " scale " << scale << " on " << int8_isa_name(GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, Int8Gemm,
                         ::testing::Values(Int8Isa::kPortable, Int8Isa::kAvx2, Int8Isa::kAvx512Vnni,
                                           Int8Isa::kAmx),
                         [](const auto& info) { return std::string(int8_isa_name(info.param)); });

}  // namespace
}  // namespace rlx::cpu
