// The cpu GEMM (plugins/cpu/src/gemm.h) on every ISA path this CPU can run, against a naive
// float64 triple loop written here: awkward sizes, transposed operands, prepacked B, f64,
// f16/bf16 operands, the thread split, and fused epilogues against their unfused composition.
// The LIR fusion pass is checked end to end through the cpu plugin: the same program run with
// and without fuse_gemm_epilogues must agree with a float64 reference.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "erf_f32.h"
#include "gemm.h"
#include "gemm_amx_bf16.h"
#include "gemm_epilogue_fusion.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"
#include "rlx/core/quant.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::cpu {
namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// Restores the process-wide ISA after a test forces one.
struct IsaScope {
  GemmIsa saved = gemm_isa();
  ~IsaScope() { set_gemm_isa(saved); }
};

std::vector<GemmIsa> runnable_isas() {
  std::vector<GemmIsa> v;
  for (GemmIsa isa : {GemmIsa::kPortable, GemmIsa::kAvx2, GemmIsa::kAvx512})
    if (gemm_isa_supported(isa)) v.push_back(isa);
  return v;
}

// C = A B in float64 from views with element (i, j) at p[i * rs + j * cs].
std::vector<double> reference(int64_t M, int64_t N, int64_t K, const std::vector<double>& a,
                              int64_t ars, int64_t acs, const std::vector<double>& b, int64_t brs,
                              int64_t bcs) {
  std::vector<double> c(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[i * ars + k * acs] * b[k * brs + j * bcs];
      c[i * N + j] = s;
    }
  return c;
}

struct Shape {
  int64_t M, N, K;
};
const Shape kShapes[] = {{1, 1, 1},   {7, 13, 31},  {13, 7, 1},   {31, 33, 65}, {33, 31, 100},
                         {65, 17, 7}, {100, 257, 33}, {257, 100, 300}, {1, 384, 384}, {14, 32, 256},
                         {32, 1, 257}, {3, 5, 0}};

TEST(CpuGemm, F32AllIsasShapesLayoutsAndPrepackedB) {
  IsaScope scope;
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (const Shape& s : kShapes) {
      for (int layout = 0; layout < 4; ++layout) {  // bit 0: A transposed, bit 1: B transposed
        const bool at = layout & 1, bt = layout & 2;
        auto a = random_floats(s.M * s.K, 1), b = random_floats(s.K * s.N, 2);
        const int64_t ars = at ? 1 : s.K, acs = at ? s.M : 1, brs = bt ? 1 : s.N, bcs = bt ? s.K : 1;
        auto want = reference(s.M, s.N, s.K, {a.begin(), a.end()}, ars, acs, {b.begin(), b.end()}, brs, bcs);
        for (bool prepack : {false, true}) {
          std::vector<float> c(s.M * s.N, -7.0f);
          GemmArgs g;
          g.M = s.M, g.N = s.N, g.K = s.K, g.ldc = s.N, g.c = c.data();
          g.a = MatView{a.data(), DType::kF32, ars, acs};
          g.b = MatView{b.data(), DType::kF32, brs, bcs};
          PackedB pb;
          if (prepack) pb = pack_b(g.b, s.K, s.N, false), g.packed = &pb;
          gemm(g);
          for (int64_t i = 0; i < s.M * s.N; ++i)
            ASSERT_NEAR(c[i], want[i], 1e-6 * (s.K + 1))
                << gemm_isa_name(isa) << " " << s.M << "x" << s.N << "x" << s.K << " layout " << layout
                << " prepacked " << prepack << " at " << i;
        }
      }
    }
  }
}

TEST(CpuGemm, F64AllIsas) {
  IsaScope scope;
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (const Shape& s : kShapes) {
      auto af = random_floats(s.M * s.K, 3), bf = random_floats(s.K * s.N, 4);
      std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
      for (auto& x : a) x += 1e-9;  // bits a float could not hold
      auto want = reference(s.M, s.N, s.K, a, s.K, 1, b, s.N, 1);
      std::vector<double> c(s.M * s.N);
      GemmArgs g;
      g.M = s.M, g.N = s.N, g.K = s.K, g.ldc = s.N, g.c = c.data(), g.f64 = true;
      g.a = MatView{a.data(), DType::kF64, s.K, 1};
      g.b = MatView{b.data(), DType::kF64, s.N, 1};
      gemm(g);
      for (int64_t i = 0; i < s.M * s.N; ++i)
        ASSERT_NEAR(c[i], want[i], 1e-13 * (s.K + 1)) << gemm_isa_name(isa) << " at " << i;
    }
  }
}

TEST(CpuGemm, F16AndBf16OperandsWidenWhilePacking) {
  IsaScope scope;
  const int64_t M = 19, N = 37, K = 45;
  auto af = random_floats(M * K, 5), bf = random_floats(K * N, 6);
  for (DType dt : {DType::kF16, DType::kBF16}) {
    std::vector<uint16_t> a(M * K), b(K * N);
    std::vector<double> ad(M * K), bd(K * N);
    for (int64_t i = 0; i < M * K; ++i) {
      a[i] = dt == DType::kF16 ? f32_to_f16(af[i]) : f32_to_bf16(af[i]);
      ad[i] = dt == DType::kF16 ? f16_to_f32(a[i]) : bf16_to_f32(a[i]);
    }
    for (int64_t i = 0; i < K * N; ++i) {
      b[i] = dt == DType::kF16 ? f32_to_f16(bf[i]) : f32_to_bf16(bf[i]);
      bd[i] = dt == DType::kF16 ? f16_to_f32(b[i]) : bf16_to_f32(b[i]);
    }
    auto want = reference(M, N, K, ad, K, 1, bd, 1, K);  // B read transposed
    for (GemmIsa isa : runnable_isas()) {
      set_gemm_isa(isa);
      std::vector<float> c(M * N);
      GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data();
      g.a = MatView{a.data(), dt, K, 1};
      g.b = MatView{b.data(), dt, 1, K};
      gemm(g);
      for (int64_t i = 0; i < M * N; ++i) ASSERT_NEAR(c[i], want[i], 1e-5) << gemm_isa_name(isa);
    }
  }
}

TEST(CpuGemm, RowAndBlockEntryPointsMatchTheThreadedSplit) {
  const int64_t M = 70, N = 90, K = 40;
  auto a = random_floats(M * K, 7), b = random_floats(K * N, 8);
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.ldc = N;
  g.a = MatView{a.data(), DType::kF32, K, 1};
  g.b = MatView{b.data(), DType::kF32, N, 1};
  std::vector<float> whole(M * N), rows(M * N);
  g.c = whole.data();
  gemm(g);
  g.c = rows.data();
  gemm_rows(g, 0, 29);
  gemm_rows(g, 29, M);
  for (int64_t i = 0; i < M * N; ++i) EXPECT_EQ(whole[i], rows[i]) << i;
}

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(CpuGemm, EpilogueBiasGeluResidualMatchesUnfusedComposition) {
  IsaScope scope;
  const int64_t M = 33, N = 70, K = 29;
  auto a = random_floats(M * K, 9), b = random_floats(K * N, 10);
  auto bias = random_floats(N, 11), res = random_floats(M * N, 12);
  for (auto& x : a) x *= 2;  // GELU arguments over about [-6, 6]
  auto prod = reference(M, N, K, {a.begin(), a.end()}, K, 1, {b.begin(), b.end()}, N, 1);
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (auto gelu : {GemmEpilogue::Gelu::kNone, GemmEpilogue::Gelu::kErf, GemmEpilogue::Gelu::kTanh}) {
      GemmEpilogue ep = GemmEpilogue::bias_gelu_residual(bias.data(), gelu, res.data(), N);
      std::vector<float> c(M * N);
      GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data(), g.epilogue = &ep;
      g.a = MatView{a.data(), DType::kF32, K, 1};
      g.b = MatView{b.data(), DType::kF32, N, 1};
      gemm(g);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double x = prod[i * N + j] + bias[j];
          if (gelu == GemmEpilogue::Gelu::kErf) x = gelu_erf(x);
          if (gelu == GemmEpilogue::Gelu::kTanh) x = gelu_tanh(x);
          x += res[i * N + j];
          ASSERT_NEAR(c[i * N + j], x, 2e-5 * (1 + std::fabs(x)))
              << gemm_isa_name(isa) << " gelu " << int(gelu) << " at " << i << "," << j;
        }
    }
  }
}

// The IR writes GELU as mul(mul(x, 0.5), add(erf(mul(x, 1 / sqrt 2)), 1)); simplify() makes it
// one step whatever the operand order, computing the same bits, and keeps a step still read.
TEST(CpuGemm, EpilogueSimplifyFoldsTheIrGeluIntoOneStepWithTheSameBits) {
  IsaScope scope;
  const int64_t M = 5, N = 70;
  auto src = random_floats(M * N, 21), res = random_floats(M * N, 22);
  for (auto& x : src) x *= 6;
  for (bool swapped : {false, true}) {
    for (bool erf_reused : {false, true}) {
      GemmEpilogue ep;
      const int x = ep.acc();
      const int c_half = ep.constant(0.5f), c_rt = ep.constant(0.70710678118654752f);
      const int half =
          swapped ? ep.binary(EpOp::kMul, c_half, x) : ep.binary(EpOp::kMul, x, c_half);
      const int e =
          ep.unary(EpOp::kErf, ep.binary(EpOp::kMul, swapped ? c_rt : x, swapped ? x : c_rt));
      const int one = ep.constant(1.0f);
      const int sum = swapped ? ep.binary(EpOp::kAdd, one, e) : ep.binary(EpOp::kAdd, e, one);
      int y = swapped ? ep.binary(EpOp::kMul, sum, half) : ep.binary(EpOp::kMul, half, sum);
      if (erf_reused) y = ep.binary(EpOp::kAdd, y, e);
      y = ep.binary(EpOp::kAdd, y, ep.load(res.data(), N, 1));
      GemmEpilogue simple = ep;
      simple.simplify();
      // acc, gelu, [erf's argument: mul, its constant, erf, add], load, add.
      EXPECT_EQ(simple.num_steps, erf_reused ? 8 : 4) << swapped;
      EXPECT_EQ(simple.steps[1].op, erf_reused ? EpOp::kConst : EpOp::kGeluErf);
      for (GemmIsa isa : runnable_isas()) {
        set_gemm_isa(isa);
        std::vector<float> a = src, b = src;
        apply_epilogue(ep, a.data(), N, 0, 0, M, N);
        apply_epilogue(simple, b.data(), N, 0, 0, M, N);
        for (int64_t i = 0; i < M * N; ++i)
          ASSERT_EQ(std::memcmp(&a[i], &b[i], 4), 0) << gemm_isa_name(isa) << " at " << i;
      }
    }
  }
}

TEST(CpuGemm, EpilogueSaysWhetherItsLoadsTouchARange) {
  std::vector<float> y(4 * 8), other(4 * 8), bias(8);
  GemmEpilogue ep =
      GemmEpilogue::bias_gelu_residual(bias.data(), GemmEpilogue::Gelu::kNone, other.data(), 8);
  EXPECT_FALSE(ep.reads_within(4, 8, y.data(), y.data() + y.size()));
  EXPECT_TRUE(ep.reads_within(4, 8, other.data() + 31, other.data() + 32));  // its last element
  EXPECT_FALSE(ep.reads_within(4, 8, other.data() + 32, other.data() + 40));
  // A residual that is the result itself (the planner let the result overwrite it).
  GemmEpilogue in_place =
      GemmEpilogue::bias_gelu_residual(nullptr, GemmEpilogue::Gelu::kNone, y.data(), 8);
  EXPECT_TRUE(in_place.reads_within(4, 8, y.data(), y.data() + y.size()));
}

// exp, tanh and erf of the epilogue against the C library over a sweep that crosses every
// branch (series/formula switch at 0.5, exp's overflow, underflow and denormal range).
TEST(CpuGemm, EpilogueTranscendentalsAreWithinAFewUlp) {
  IsaScope scope;
  std::vector<float> xs;
  for (float x = -110; x <= 90; x += 0.01f) xs.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-8f, 0.4999999f, 0.5f, 88.72f, 88.73f})
    xs.push_back(x);
  const int64_t n = static_cast<int64_t>(xs.size());
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (EpOp op : {EpOp::kExp, EpOp::kTanh, EpOp::kErf}) {
      GemmEpilogue ep;
      ep.unary(op, ep.acc());
      std::vector<float> c = xs;
      apply_epilogue(ep, c.data(), n, 0, 0, 1, n);
      for (int64_t i = 0; i < n; ++i) {
        double x = xs[i];
        double want = op == EpOp::kExp ? std::exp(x) : op == EpOp::kTanh ? std::tanh(x) : std::erf(x);
        if (std::isinf(want) || want > 3.4028234663852886e38) {
          EXPECT_TRUE(std::isinf(c[i])) << x;
          continue;
        }
        double tol = op == EpOp::kErf ? 1.6e-7 + 1e-6 * std::fabs(want)
                                      : 6e-7 * std::fabs(want) + 1.5e-45;
        ASSERT_NEAR(c[i], want, tol) << gemm_isa_name(isa) << " op " << int(op) << " x " << x;
      }
      float nan = std::nanf("");
      apply_epilogue(ep, &nan, 1, 0, 0, 1, 1);
      EXPECT_TRUE(std::isnan(nan));
    }
  }
}

// Epilogues whose first steps (bias, then residual) the micro-kernel adds in registers, with
// and without steps after them, and one whose later step reads the raw product (done as a whole
// pass instead): every ISA, several KC blocks, prepacked and plain B, threaded, edge tiles.
TEST(CpuGemm, EpilogueBiasAndResidualInRegistersMatchTheReference) {
  IsaScope scope;
  const int64_t M = 37, N = 200, K = 600;
  auto a = random_floats(M * K, 31), b = random_floats(K * N, 32);
  auto bias = random_floats(N, 33), res = random_floats(M * N, 34);
  auto prod = reference(M, N, K, {a.begin(), a.end()}, K, 1, {b.begin(), b.end()}, N, 1);
  enum Kind { kBias, kBiasRes, kBiasResTanh, kRawAfterBias };
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (Kind kind : {kBias, kBiasRes, kBiasResTanh, kRawAfterBias}) {
      GemmEpilogue ep;
      int acc = ep.acc();
      int x = ep.binary(EpOp::kAdd, acc, ep.load(bias.data(), 0, 1));
      if (kind == kBiasRes || kind == kBiasResTanh) x = ep.binary(EpOp::kAdd, ep.load(res.data(), N, 1), x);
      if (kind == kBiasResTanh) x = ep.unary(EpOp::kTanh, x);
      if (kind == kRawAfterBias) ep.binary(EpOp::kSub, x, acc);  // = bias, from the raw product
      for (bool prepacked : {false, true}) {
        std::vector<float> c(M * N, 7.0f);
        GemmArgs g;
        g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data(), g.epilogue = &ep;
        g.a = MatView{a.data(), DType::kF32, K, 1};
        g.b = MatView{b.data(), DType::kF32, N, 1};
        PackedB pb;
        if (prepacked) pb = pack_b(g.b, K, N, false), g.packed = &pb;
        gemm(g);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double want = prod[i * N + j] + bias[j];
            if (kind == kBiasRes || kind == kBiasResTanh) want += res[i * N + j];
            if (kind == kBiasResTanh) want = std::tanh(want);
            if (kind == kRawAfterBias) want = bias[j];
            ASSERT_NEAR(c[i * N + j], want, 2e-4 * (1 + std::fabs(want)))
                << gemm_isa_name(isa) << " kind " << kind << " prepacked " << prepacked << " at "
                << i << "," << j;
          }
      }
    }
  }
}

// Distance of a float result from the true value in units in the last place of the float
// nearest to the truth (below the smallest normal, of the smallest normal).
double ulps(float got, double want) {
  double w = std::fabs(want);
  float wf = static_cast<float>(w);
  double ulp = std::max<double>(std::nextafter(wf, INFINITY) - wf, std::numeric_limits<float>::denorm_min());
  if (wf < std::numeric_limits<float>::min()) ulp = std::numeric_limits<float>::denorm_min();
  return std::fabs(got - want) / ulp;
}

// erf's test points: floats spread evenly over the bit patterns of [2^-30, 5] (both signs,
// every branch and the switch at 1), and the special values.
std::vector<float> erf_sweep() {
  std::vector<float> xs;
  uint32_t lo, hi;
  float flo = 0x1p-30f, fhi = 5.0f;
  std::memcpy(&lo, &flo, 4), std::memcpy(&hi, &fhi, 4);
  for (uint32_t b = lo; b <= hi; b += 613) {
    float x;
    std::memcpy(&x, &b, 4);
    xs.push_back(x), xs.push_back(-x);
  }
  for (float x : {0.0f, -0.0f, 1e-38f, 0.99999994f, 1.0f, 1.0000001f, 3.9999998f, 4.0f, 9.0f,
                  1e30f, INFINITY, -INFINITY})
    xs.push_back(x);
  return xs;
}

// erf on every ISA against the C library's double erf over erf_sweep(). The bound is in ulps of
// the result, so it is strict near 0 as well as near 1.
TEST(CpuGemm, EpilogueErfIsWithinTwoUlpOfDoubleErfWithFma) {
  IsaScope scope;
  const std::vector<float> xs = erf_sweep();
  const int64_t n = static_cast<int64_t>(xs.size());
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    GemmEpilogue ep;
    ep.unary(EpOp::kErf, ep.acc());
    std::vector<float> c = xs;
    apply_epilogue(ep, c.data(), n, 0, 0, 1, n);
    double worst = 0;
    float worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      double u = ulps(c[i], std::erf(static_cast<double>(xs[i])));
      if (u > worst) worst = u, worst_x = xs[i];
    }
    // The portable build has no FMA: its leading term rounds twice.
    EXPECT_LE(worst, isa == GemmIsa::kPortable ? 3.0 : 2.0) << gemm_isa_name(isa) << ": worst at x = " << worst_x;
    std::vector<float> nan{std::nanf("")};
    apply_epilogue(ep, nan.data(), 1, 0, 0, 1, 1);
    EXPECT_TRUE(std::isnan(nan[0])) << gemm_isa_name(isa);
    RecordProperty(std::string("max_ulp_") + gemm_isa_name(isa), std::to_string(worst));
    std::printf("%s: erf worst %.3f ulp at %.9g\n", gemm_isa_name(isa), worst, worst_x);
  }
}

// The loop kernels' f32 erf (src/erf_f32.h: the interpreter's and, pasted as C, the generated
// kernels'), on the same sweep: no FMA there, so its leading term rounds twice, as the portable
// epilogue's does.
TEST(CpuGemm, LoopKernelErfIsWithinThreeUlpOfDoubleErf) {
  const std::vector<float> xs = erf_sweep();
  double worst = 0;
  float worst_x = 0;
  for (float x : xs) {
    const double u = ulps(rlx_erff(x), std::erf(static_cast<double>(x)));
    if (u > worst) worst = u, worst_x = x;
  }
  EXPECT_LE(worst, 3.0) << "worst at x = " << worst_x;
  EXPECT_TRUE(std::isnan(rlx_erff(std::nanf(""))));
  EXPECT_EQ(rlx_erff(-0.0f), -0.0f);
  EXPECT_TRUE(std::signbit(rlx_erff(-0.0f)));
  std::printf("loop kernels: erf worst %.3f ulp at %.9g\n", worst, worst_x);
}

// Every epilogue op on rows whose width is not a multiple of the vector chunk, with a strided
// operand (cs = 2), a broadcast scalar (rs = cs = 0) and NaN inputs, against double arithmetic.
TEST(CpuGemm, EpilogueEveryOpOnPartialChunksStridedOperandsAndNaN) {
  IsaScope scope;
  const int64_t m = 3, n = 83, ldc = 90;
  auto base = random_floats(m * ldc, 21);
  auto other = random_floats(m * n * 2, 22);
  base[5] = std::nanf("");
  other[2 * 7] = std::nanf("");
  const float scalar = 0.375f;
  struct Case {
    EpOp op;
    double (*f)(double, double);
  };
  const Case cases[] = {
      {EpOp::kNeg, [](double x, double) { return -x; }},
      {EpOp::kAbs, [](double x, double) { return std::fabs(x); }},
      {EpOp::kExp, [](double x, double) { return std::exp(x); }},
      {EpOp::kTanh, [](double x, double) { return std::tanh(x); }},
      {EpOp::kSqrt, [](double x, double) { return std::sqrt(std::fabs(x)); }},
      {EpOp::kRsqrt, [](double x, double) { return 1 / std::sqrt(std::fabs(x)); }},
      {EpOp::kLogistic, [](double x, double) { return 1 / (1 + std::exp(-x)); }},
      {EpOp::kAdd, [](double x, double y) { return x + y; }},
      {EpOp::kSub, [](double x, double y) { return x - y; }},
      {EpOp::kMul, [](double x, double y) { return x * y; }},
      {EpOp::kDiv, [](double x, double y) { return x / y; }},
      {EpOp::kMax, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }},
      {EpOp::kMin, [](double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }},
  };
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (const Case& k : cases) {
      const bool unary = k.op < EpOp::kAdd;
      const bool root = k.op == EpOp::kSqrt || k.op == EpOp::kRsqrt;
      GemmEpilogue ep;
      int x = ep.acc();
      if (root) x = ep.unary(EpOp::kAbs, x);
      // y = op(x, other[i, 2j]) * scalar, or op(x) * scalar
      int y = unary ? ep.unary(k.op, x) : ep.binary(k.op, x, ep.load(other.data(), 2 * n, 2));
      ep.binary(EpOp::kMul, y, ep.load(&scalar, 0, 0));
      std::vector<float> c = base;
      apply_epilogue(ep, c.data(), ldc, 0, 0, m, n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float got = c[i * ldc + j];
          if (j >= n) {  // past the block: untouched
            ASSERT_EQ(std::memcmp(&got, &base[i * ldc + j], 4), 0) << i << "," << j;
            continue;
          }
          double want = k.f(base[i * ldc + j], other[i * 2 * n + 2 * j]) * scalar;
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got)) << gemm_isa_name(isa) << " op " << int(k.op) << " " << i << "," << j;
            continue;
          }
          ASSERT_NEAR(got, want, 4e-7 * std::fabs(want) + 1e-30)
              << gemm_isa_name(isa) << " op " << int(k.op) << " at " << i << "," << j;
        }
    }
  }
}

// ---- LIR fusion, end to end through the cpu plugin ------------------------------------------

lir::Program lower(const std::string& ir) {
  auto target = test::cpu_target();
  DispatchResult d = dispatch(parse_graph(ir, "test.rlx"), *target);
  run_default_passes(d.graph);
  return lower_to_lir(d.graph);
}

// `rlx explain` says what runs a bf16 product: AMX tiles where this CPU grants them and K fills
// whole tiles, else the f32 GEMM on widened operands.
TEST(CpuDispatch, ExplainSaysWhatRunsBf16Products) {
  for (int64_t K : {64, 40}) {
    const std::string ir = fmt::format(R"(graph @t(%x: bf16[4,{0}], %w: bf16[{0},8]) {{
  %y = MatMul(%x, %w) : bf16[4,8]
  return %y
}}
)",
                                       K);
    DispatchResult d = dispatch(parse_graph(ir, "test.rlx"), *test::cpu_target());
    ASSERT_EQ(d.report.entries.size(), 1u);
    ASSERT_EQ(d.report.entries[0].notes.size(), 1u) << d.report.to_text();
    const std::string& note = d.report.entries[0].notes[0];
    const char* want = !amx_bf16_enabled() ? "widened to f32 for the f32 GEMM"
                       : K % 32 == 0       ? "on AMX tiles (tdpbf16ps"
                                           : "(K = 40 is not a multiple of 32";
    EXPECT_NE(note.find(want), std::string::npos) << note;
  }
}

// And bf16 attention: on AMX tiles where they are granted and the head sizes fill whole tiles,
// else the f32 kernel on widened values; the claim says which.
TEST(CpuDispatch, ExplainSaysWhatRunsBf16Attention) {
  for (int64_t D : {32, 24}) {
    const std::string ir =
        fmt::format(R"(graph @t(%q: bf16[1,2,5,{0}], %k: bf16[1,2,7,{0}], %v: bf16[1,2,7,16]) {{
  %a = Attention(%q, %k, %v) : bf16[1,2,5,16]
  return %a
}}
)",
                    D);
    DispatchResult d = dispatch(parse_graph(ir, "test.rlx"), *test::cpu_target());
    ASSERT_EQ(d.report.entries.size(), 1u);
    const std::string& note = d.report.entries[0].detail;
    const bool amx = amx_bf16_enabled() && D % 32 == 0;
    EXPECT_NE(note.find(amx ? "bf16 attention on AMX tiles" : "f32 attention: bf16 q widened"),
              std::string::npos)
        << note;
  }
}

// Runs `p` on the cpu plugin with inputs by name; returns the first output.
std::vector<float> run_program(const lir::Program& p, const std::map<std::string, std::vector<float>>& in) {
  auto exe = test::cpu_target()->compile(p);
  std::vector<void*> ptrs(p.buffers.size(), nullptr);
  std::vector<std::vector<float>> keep;
  for (auto& [name, b] : p.inputs) ptrs[b] = const_cast<float*>(in.at(name).data());
  std::vector<float> out(p.buffers[p.outputs[0].second].numel());
  ptrs[p.outputs[0].second] = out.data();
  exe->run(ptrs);
  return out;
}

TEST(CpuGemmFusion, MatMulBiasGeluResidualMergesIntoOneCallAndAgrees) {
  const int64_t M = 37, K = 48, N = 40;
  for (const char* approx : {"none", "tanh"}) {
    const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1}], %w: f32[{1},{2}], %b: f32[{2}], %r: f32[{0},{2}]) {{
  %y = MatMul(%x, %w) : f32[{0},{2}]
  %z = Add(%y, %b) : f32[{0},{2}]
  %g = GELU(%z) {{approximate = "{3}"}} : f32[{0},{2}]
  %o = Add(%g, %r) : f32[{0},{2}]
  return %o
}}
)", M, K, N, approx);
    lir::Program p = lower(ir);
    lir::Program fused = p;
    ASSERT_EQ(fuse_gemm_epilogues(fused), 1) << lir::print_program(p);
    EXPECT_EQ(fused.kernels.size(), p.kernels.size() - 1);
    auto x = random_floats(M * K, 13), w = random_floats(K * N, 14), b = random_floats(N, 15),
         r = random_floats(M * N, 16);
    std::map<std::string, std::vector<float>> in{{"x", x}, {"w", w}, {"b", b}, {"r", r}};
    auto plain = run_program(p, in), merged = run_program(fused, in);
    auto prod = reference(M, N, K, {x.begin(), x.end()}, K, 1, {w.begin(), w.end()}, N, 1);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double z = prod[i * N + j] + b[j];
        double want = (std::string(approx) == "none" ? gelu_erf(z) : gelu_tanh(z)) + r[i * N + j];
        ASSERT_NEAR(merged[i * N + j], want, 2e-5) << approx << " " << i << "," << j;
        ASSERT_NEAR(plain[i * N + j], merged[i * N + j], 2e-5) << approx;
      }
  }
}

TEST(CpuGemmFusion, LinearWithBiasKeepsItsBiasAndTakesTheGelu) {
  const int64_t M = 5, K = 23, N = 19;
  const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1}], %w: f32[{2},{1}], %b: f32[{2}]) {{
  %y = Linear(%x, %w, %b) : f32[{0},{2}]
  %g = GELU(%y) : f32[{0},{2}]
  return %g
}}
)", M, K, N);
  lir::Program p = lower(ir);
  ASSERT_EQ(fuse_gemm_epilogues(p), 1);
  auto x = random_floats(M * K, 17), w = random_floats(N * K, 18), b = random_floats(N, 19);
  auto got = run_program(p, {{"x", x}, {"w", w}, {"b", b}});
  auto prod = reference(M, N, K, {x.begin(), x.end()}, K, 1, {w.begin(), w.end()}, 1, K);
  for (int64_t i = 0; i < M * N; ++i) ASSERT_NEAR(got[i], gelu_erf(prod[i] + b[i % N]), 2e-5) << i;
}

// A quantized product takes its consumer too (Gemma's GELU(gate) * up): on the decode path
// (one row, products in registers) and the prefill path (several rows, decoded weight tiles).
TEST(CpuGemmFusion, DequantMatMulTakesGeluTimesAnotherTensor) {
  const int64_t K = 64, N = 45;
  std::mt19937 rng(31);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<uint8_t> w(N * (K / 32) * 34);
  for (size_t b = 0; b < w.size(); b += 34) {
    const uint16_t d = f32_to_f16(0.01f);
    std::memcpy(&w[b], &d, 2);
    for (int j = 0; j < 32; ++j) w[b + 2 + j] = static_cast<uint8_t>(static_cast<int8_t>(q(rng)));
  }
  std::vector<float> wf(N * K);
  quant::dequantize(quant::QType::kQ8_0, w.data(), wf.data(), N * K);
  for (int64_t M : {1, 6}) {
    const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1}], %w: u8[{2},68], %r: f32[{0},{2}]) {{
  %y = DequantMatMul(%x, %w) {{qtype = "q8_0"}} : f32[{0},{2}]
  %g = GELU(%y) {{approximate = "tanh"}} : f32[{0},{2}]
  %o = Mul(%g, %r) : f32[{0},{2}]
  return %o
}}
)", M, K, N);
    lir::Program p = lower(ir);
    ASSERT_EQ(fuse_gemm_epilogues(p), 1) << lir::print_program(p);
    auto x = random_floats(M * K, 41), r = random_floats(M * N, 42);
    auto exe = test::cpu_target()->compile(p);
    std::vector<void*> ptrs(p.buffers.size(), nullptr);
    for (auto& [name, b] : p.inputs)
      ptrs[b] = name == "x" ? static_cast<void*>(x.data())
                : name == "r" ? static_cast<void*>(r.data()) : static_cast<void*>(w.data());
    std::vector<float> out(M * N);
    ptrs[p.outputs[0].second] = out.data();
    exe->run(ptrs);
    auto prod = reference(M, N, K, {x.begin(), x.end()}, K, 1, {wf.begin(), wf.end()}, 1, K);
    for (int64_t i = 0; i < M * N; ++i)
      ASSERT_NEAR(out[i], gelu_tanh(prod[i]) * r[i], 2e-5) << "M=" << M << " at " << i;
  }
}

// rlx quantize's SmoothQuant Mul before a QMatMul merges into it as a prologue (and a GELU after
// it as an epilogue): the same bytes as the separate kernels, static and per-row parameters, and
// for static ones the scheme's own arithmetic done here by hand.
TEST(CpuGemmFusion, QMatMulTakesTheSmoothingMulBeforeIt) {
  const int64_t M = 37, K = 70, N = 29;
  std::mt19937 rng(57);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<int8_t> w(N * K);
  for (auto& v : w) v = static_cast<int8_t>(q(rng));
  auto x = random_floats(M * K, 58), sm = random_floats(K, 59), ws = random_floats(N, 60),
       b = random_floats(N, 61);
  for (auto& v : ws) v = 0.001f + std::fabs(v) * 0.01f;
  const float xs = 0.011f;
  const uint8_t xz = 131;
  for (bool fixed : {true, false}) {
    const std::string params = fixed ? ", %xs, %xz" : "";
    const std::string ir = fmt::format(
        R"(graph @t(%x: f32[{0},{1}], %s: f32[{1}], %w: i8[{2},{1}], %ws: f32[{2}], %xs: f32[], %xz: u8[], %b: f32[{2}]) {{
  %m = Mul(%x, %s) : f32[{0},{1}]
  %y = QMatMul(%m, %w, %ws{3}, %b) : f32[{0},{2}]
  %g = GELU(%y) : f32[{0},{2}]
  return %g
}}
)",
        M, K, N, params);
    lir::Program p = lower(ir);
    lir::Program fused = p;
    ASSERT_EQ(fuse_gemm_epilogues(fused), 2) << lir::print_program(p);
    ASSERT_EQ(fused.kernels.size(), p.kernels.size() - 2) << lir::print_program(fused);
    auto run = [&](const lir::Program& prog) {
      auto exe = test::cpu_target()->compile(prog);
      std::vector<void*> ptrs(prog.buffers.size(), nullptr);
      const std::map<std::string, const void*> by_name{
          {"x", x.data()}, {"s", sm.data()}, {"w", w.data()}, {"ws", ws.data()},
          {"xs", &xs},     {"xz", &xz},      {"b", b.data()}};
      for (auto& [name, buf] : prog.inputs) ptrs[buf] = const_cast<void*>(by_name.at(name));
      std::vector<float> out(M * N);
      ptrs[prog.outputs[0].second] = out.data();
      exe->run(ptrs);
      return out;
    };
    const auto plain = run(p), merged = run(fused);
    ASSERT_EQ(std::memcmp(plain.data(), merged.data(), plain.size() * 4), 0) << "fixed " << fixed;
    if (!fixed) continue;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const float v = std::nearbyint(x[i * K + k] * sm[k] / xs) + xz;
          acc += (std::clamp(v, 0.0f, 255.0f) - xz) * w[j * K + k];
        }
        const double want = gelu_erf(acc * xs * ws[j] + b[j]);
        ASSERT_NEAR(merged[i * N + j], want, 1e-5 * (1 + std::fabs(want))) << i << "," << j;
      }
  }
}

// The head transposes around Attention fold into it: q, k and v read in their [B, S, H, D]
// layout, the result written in the layout the copy after it made; the same bytes.
TEST(CpuGemmFusion, AttentionReadsAndWritesTheHeadLayoutsInPlace) {
  const int64_t B = 2, S = 5, H = 3, D = 16;
  const std::string ir = fmt::format(
      R"(graph @t(%q: f32[{0},{1},{2},{3}], %k: f32[{0},{1},{2},{3}], %v: f32[{0},{1},{2},{3}]) {{
  %qt = Transpose(%q) {{perm = [0, 2, 1, 3]}} : f32[{0},{2},{1},{3}]
  %kt = Transpose(%k) {{perm = [0, 2, 1, 3]}} : f32[{0},{2},{1},{3}]
  %vt = Transpose(%v) {{perm = [0, 2, 1, 3]}} : f32[{0},{2},{1},{3}]
  %a = Attention(%qt, %kt, %vt) {{mask = "causal"}} : f32[{0},{2},{1},{3}]
  %o = Transpose(%a) {{perm = [0, 2, 1, 3]}} : f32[{0},{1},{2},{3}]
  return %o
}}
)",
      B, S, H, D);
  lir::Program p = lower(ir);
  lir::Program fused = p;
  ASSERT_EQ(fuse_gemm_epilogues(fused), 4) << lir::print_program(p);
  EXPECT_EQ(fused.kernels.size(), p.kernels.size() - 4) << lir::print_program(fused);
  auto q = random_floats(B * S * H * D, 71), k = random_floats(B * S * H * D, 72),
       v = random_floats(B * S * H * D, 73);
  std::map<std::string, std::vector<float>> in{{"q", q}, {"k", k}, {"v", v}};
  const auto plain = run_program(p, in), merged = run_program(fused, in);
  ASSERT_EQ(std::memcmp(plain.data(), merged.data(), plain.size() * 4), 0);
  // And against the definition: row (b, s, h) attends to keys s' <= s of head h.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < H; ++h) {
        auto at = [&](int64_t ss) { return ((b * S + ss) * H + h) * D; };
        std::vector<double> w(s + 1);
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= s; ++j) {
          double d = 0;
          for (int64_t t = 0; t < D; ++t) d += double(q[at(s) + t]) * k[at(j) + t];
          w[j] = d / std::sqrt(double(D));
          mx = std::max(mx, w[j]);
        }
        for (auto& x : w) sum += (x = std::exp(x - mx));
        for (int64_t t = 0; t < D; ++t) {
          double o = 0;
          for (int64_t j = 0; j <= s; ++j) o += w[j] * v[at(j) + t];
          ASSERT_NEAR(merged[at(s) + t], o / sum, 1e-5) << b << "," << s << "," << h;
        }
      }
}

// A batched MatMul (weights broadcast over the batch) with a per-column bias and a residual of
// the result's shape: the epilogue's row index runs over batch x rows.
TEST(CpuGemmFusion, BatchedMatMulWithBiasAndResidual) {
  const int64_t B = 3, M = 5, K = 9, N = 20;
  const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1},{2}], %w: f32[{2},{3}], %b: f32[{3}], %r: f32[{0},{1},{3}]) {{
  %y = MatMul(%x, %w) : f32[{0},{1},{3}]
  %z = Add(%y, %b) : f32[{0},{1},{3}]
  %o = Add(%z, %r) : f32[{0},{1},{3}]
  return %o
}}
)", B, M, K, N);
  lir::Program p = lower(ir);
  ASSERT_EQ(fuse_gemm_epilogues(p), 1) << lir::print_program(p);
  auto x = random_floats(B * M * K, 20), w = random_floats(K * N, 21), b = random_floats(N, 22),
       r = random_floats(B * M * N, 23);
  auto got = run_program(p, {{"x", x}, {"w", w}, {"b", b}, {"r", r}});
  auto prod = reference(B * M, N, K, {x.begin(), x.end()}, K, 1, {w.begin(), w.end()}, N, 1);
  for (int64_t i = 0; i < B * M * N; ++i)
    ASSERT_NEAR(got[i], prod[i] + b[i % N] + r[i], 1e-5) << i;
}

TEST(CpuGemmFusion, ResultThatIsAlsoReturnedIsNotFused) {
  lir::Program p = lower(R"(graph @t(%x: f32[4,8], %w: f32[8,6]) {
  %y = MatMul(%x, %w) : f32[4,6]
  %g = GELU(%y) : f32[4,6]
  return %g, %y
}
)");
  EXPECT_EQ(fuse_gemm_epilogues(p), 0);
}

// A weight converted from f16 that two GEMMs read is computed once, when the executable is
// built (not a program constant), and packed once like one: both products agree with float64,
// and again after a run binds other weight data (the packed copy must follow it).
TEST(CpuGemmFusion, GemmOfAWeightConvertedOnceIsPackedOnceAndFollowsNewWeights) {
  Graph g = parse_graph(R"(graph @t(%x: f32[5,70]) params(%w: f16[70,70]) {
  %c = convert(%w) {dtype = f32} : f32[70,70]
  %y = MatMul(%x, %c) : f32[5,70]
  %z = MatMul(%y, %c) : f32[5,70]
  return %z
}
)", "weights.rlx");
  const int64_t n = 70;
  auto make_w = [&](unsigned seed, std::vector<double>& wd) {
    Tensor w(DType::kF16, {n, n});
    auto v = random_floats(n * n, seed);
    wd.resize(n * n);
    for (int64_t i = 0; i < n * n; ++i) {
      w.as<uint16_t>()[i] = f32_to_f16(v[i]);
      wd[i] = f16_to_f32(w.as<uint16_t>()[i]);
    }
    return w;
  };
  std::vector<double> wd;
  g.weights["w"] = make_w(41, wd);
  Session session(test::cpu_target());
  lir::Program program = session.compile(g).lir_for({});
  std::unique_ptr<Executable> exe = test::cpu_target()->compile(program);
  auto xv = random_floats(5 * n, 42);
  std::vector<float> z(5 * n);
  std::vector<void*> ptrs(program.buffers.size(), nullptr);
  ptrs[program.inputs.at(0).second] = xv.data();
  ptrs[program.outputs.at(0).second] = z.data();
  auto check = [&](const char* when) {
    auto y = reference(5, n, n, {xv.begin(), xv.end()}, n, 1, wd, n, 1);
    auto want = reference(5, n, n, y, n, 1, wd, n, 1);
    for (int64_t i = 0; i < 5 * n; ++i)
      ASSERT_NEAR(z[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << when << " at " << i;
  };
  for (const char* when : {"first run", "second run"}) {
    exe->run(ptrs);
    check(when);
  }
  Tensor w2 = make_w(43, wd);
  for (const auto& b : program.buffers)
    if (b.kind == lir::BufferKind::kConstant) ptrs[b.id] = w2.data();
  exe->run(ptrs);
  check("after new weights");
}

}  // namespace
}  // namespace rlx::cpu
