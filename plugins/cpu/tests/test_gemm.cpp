// The cpu GEMM (plugins/cpu/src/gemm.h) on every ISA path this CPU can run, against a naive
// float64 triple loop written here: awkward sizes, transposed operands, prepacked B, f64,
// f16/bf16 operands, the thread split, and fused epilogues against their unfused composition.
// The LIR fusion passes, end to end through the cpu plugin, are in test_gemm_fusion.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "erf_f32.h"
#include "gemm.h"
#include "rlx/core/half.h"
#include "test_gemm_support.h"
#include "test_support.h"

namespace rlx::cpu {
namespace {

using gemm_test::gelu_erf;
using gemm_test::gelu_tanh;
using gemm_test::random_floats;
using gemm_test::reference;

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

struct Shape {
  int64_t M, N, K;
};
const Shape kShapes[] = {{1, 1, 1},   {7, 13, 31},  {13, 7, 1},   {31, 33, 65}, {33, 31, 100},
                         {65, 17, 7}, {100, 257, 33}, {257, 100, 300}, {1, 384, 384}, {14, 32, 256},
                         {32, 1, 257}, {3, 5, 0},
                         // B read in place by full panels (M <= 192), an edge panel packed,
                         // two KC blocks; A transposed read in place.
                         {120, 200, 300}};

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

// A 16-bit result (GemmArgs::narrow): every tile's f32 sums, finished, rounded to the type by the
// thread that computed them; with a bias, the rounded product plus the bias rounded again (a
// 16-bit Linear's two roundings). Two KC blocks, so only the last may store; the sums themselves
// against the float64 loop.
TEST(CpuGemm, NarrowResultsAreTheFinishedSumsRounded) {
  IsaScope scope;
  const int64_t M = 37, N = 70, K = 300;
  auto af = random_floats(M * K, 7), bf = random_floats(K * N, 8), biasf = random_floats(N, 9);
  std::vector<double> ad(af.begin(), af.end()), bd(bf.begin(), bf.end());
  const auto want = reference(M, N, K, ad, K, 1, bd, N, 1);
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (DType dt : {DType::kF16, DType::kBF16})
      for (bool with_bias : {false, true}) {
        auto round = [&](float v) { return dt == DType::kF16 ? f32_to_f16(v) : f32_to_bf16(v); };
        auto widen = [&](uint16_t h) { return dt == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h); };
        std::vector<uint16_t> bias(N);
        for (int64_t j = 0; j < N; ++j) bias[j] = round(biasf[j]);
        std::vector<float> c(M * N);
        std::vector<uint16_t> out(M * N, 0xFFFF);
        GemmArgs g;
        g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data();
        g.a = MatView{af.data(), DType::kF32, K, 1};
        g.b = MatView{bf.data(), DType::kF32, N, 1};
        g.narrow = dt, g.narrow_out = out.data();
        g.narrow_bias = with_bias ? bias.data() : nullptr;
        gemm(g);
        for (int64_t i = 0; i < M * N; ++i) {
          ASSERT_NEAR(c[i], want[i], 1e-4) << gemm_isa_name(isa);
          const uint16_t expect =
              with_bias ? round(widen(round(c[i])) + widen(bias[i % N])) : round(c[i]);
          ASSERT_EQ(out[i], expect) << gemm_isa_name(isa) << " " << dtype_name(dt) << " bias "
                                    << with_bias << " at " << i;
        }
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

// A product with B read in place and K long beside M splits K over the threads (gemm.cpp,
// k_split_pays): each share's slices of A and B, partial sums added in front of the epilogue.
// Arenas of 2 and 3 threads take that path on any machine; slices start at odd offsets of
// transposed, row-major and f16 operands. Repeated calls give the same bits.
TEST(CpuGemm, LongKSplitOverThreadsKeepsOperandsEpilogueAndBits) {
  IsaScope scope;
  const Shape shapes[] = {{128, 128, 784}, {16, 70, 1001}, {3, 5, 777}};
  for (int threads : {2, 3}) {
    tbb::task_arena arena(threads);
    for (const Shape& s : shapes) {
      auto a = random_floats(s.M * s.K, 41), b = random_floats(s.K * s.N, 42);
      auto bias = random_floats(s.N, 43), res = random_floats(s.M * s.N, 44);
      for (int layout = 0; layout < 5;
           ++layout) {  // bit 0: A transposed, 1: B transposed, 4: f16 A
        const bool at = layout & 1, bt = layout & 2, half_a = layout == 4;
        const int64_t ars = at ? 1 : s.K, acs = at ? s.M : 1, brs = bt ? 1 : s.N,
                      bcs = bt ? s.K : 1;
        std::vector<uint16_t> a16(a.size());
        std::vector<double> ad(a.begin(), a.end());
        if (half_a)
          for (size_t i = 0; i < a.size(); ++i)
            a16[i] = f32_to_f16(a[i]), ad[i] = f16_to_f32(a16[i]);
        const auto prod = reference(s.M, s.N, s.K, ad, ars, acs, {b.begin(), b.end()}, brs, bcs);
        for (int epi = 0; epi < 2; ++epi) {  // none, bias + GELU + residual
          std::vector<float> c(s.M * s.N, -7.0f), again;
          const GemmEpilogue ep = GemmEpilogue::bias_gelu_residual(
              bias.data(), GemmEpilogue::Gelu::kErf, res.data(), s.N);
          GemmArgs g;
          g.M = s.M, g.N = s.N, g.K = s.K, g.ldc = s.N, g.c = c.data();
          g.a = half_a ? MatView{a16.data(), DType::kF16, ars, acs}
                       : MatView{a.data(), DType::kF32, ars, acs};
          g.b = MatView{b.data(), DType::kF32, brs, bcs};
          if (epi) g.epilogue = &ep;
          for (int call = 0; call < 2; ++call) {
            if (call == 1) again = c, c.assign(c.size(), -7.0f);
            arena.execute([&] { gemm(g); });
          }
          for (int64_t i = 0; i < s.M; ++i)
            for (int64_t j = 0; j < s.N; ++j) {
              double want = prod[i * s.N + j];
              if (epi) want = gelu_erf(want + bias[j]) + res[i * s.N + j];
              const int64_t at_ij = i * s.N + j;
              ASSERT_NEAR(c[at_ij], want, 1e-5 * (s.K + 1) * (1 + std::fabs(want)))
                  << threads << " threads " << s.M << "x" << s.N << "x" << s.K << " layout "
                  << layout << " epilogue " << epi << " at " << i << "," << j;
              ASSERT_EQ(c[at_ij], again[at_ij]) << "not the same bits twice, at " << at_ij;
            }
        }
      }
    }
  }
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
// `decoded`: as a loop kernel decodes into a program, with the accumulator and each constant
// read afresh at every use; simplify() merges the copies first, then finds the GELU.
TEST(CpuGemm, EpilogueSimplifyFoldsTheIrGeluIntoOneStepWithTheSameBits) {
  IsaScope scope;
  const int64_t M = 5, N = 70;
  auto src = random_floats(M * N, 21), res = random_floats(M * N, 22);
  for (auto& x : src) x *= 6;
  for (bool decoded : {false, true}) {
    for (bool swapped : {false, true}) {
      for (bool erf_reused : {false, true}) {
        GemmEpilogue ep;
        const int x0 = ep.acc();
        auto x = [&] { return decoded ? ep.acc() : x0; };
        const int c_half0 = ep.constant(0.5f), c_rt0 = ep.constant(0.70710678118654752f);
        auto c_half = [&] { return decoded ? ep.constant(0.5f) : c_half0; };
        auto c_rt = [&] { return decoded ? ep.constant(0.70710678118654752f) : c_rt0; };
        const int half =
            swapped ? ep.binary(EpOp::kMul, c_half(), x()) : ep.binary(EpOp::kMul, x(), c_half());
        const int e = ep.unary(EpOp::kErf, swapped ? ep.binary(EpOp::kMul, c_rt(), x())
                                                   : ep.binary(EpOp::kMul, x(), c_rt()));
        const int one = ep.constant(1.0f);
        const int sum = swapped ? ep.binary(EpOp::kAdd, one, e) : ep.binary(EpOp::kAdd, e, one);
        int y = swapped ? ep.binary(EpOp::kMul, sum, half) : ep.binary(EpOp::kMul, half, sum);
        if (erf_reused) y = ep.binary(EpOp::kAdd, y, e);
        y = ep.binary(EpOp::kAdd, y, ep.load(res.data(), N, 1));
        GemmEpilogue simple = ep;
        simple.simplify();
        // acc, gelu, [erf's argument: mul, its constant, erf, add], load, add.
        EXPECT_EQ(simple.num_steps, erf_reused ? 8 : 4) << swapped << decoded;
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
}

// The epilogue of a tile held elsewhere (a scratch tile) written straight to its place in the
// result, whose old contents are the residual it adds: each element read before it is stored.
TEST(CpuGemm, EpilogueWritesToAnotherPlaceEvenOverItsOwnResidual) {
  IsaScope scope;
  const int64_t M = 6, N = 83, ld = 90;
  const auto acc = random_floats(M * N, 31), bias = random_floats(N, 32),
             residual = random_floats(M * ld, 33);
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    std::vector<float> y = residual;  // the residual's storage is the result's
    const GemmEpilogue ep =
        GemmEpilogue::bias_gelu_residual(bias.data(), GemmEpilogue::Gelu::kErf, y.data(), ld);
    apply_epilogue(ep, acc.data(), N, 0, 0, M, N, y.data(), ld);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double want = gelu_erf(acc[i * N + j] + bias[j]) + residual[i * ld + j];
        ASSERT_NEAR(y[i * ld + j], want, 1e-5 * (1 + std::fabs(want)))
            << gemm_isa_name(isa) << " at " << i << ", " << j;
      }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = N; j < ld; ++j) ASSERT_EQ(y[i * ld + j], residual[i * ld + j]);
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

// acc + s * r, the momentum update SGD fuses into a weight gradient, is done in the micro-kernel's
// registers on whole tiles and by the epilogue program on edge tiles: both must round s * r
// before the add, so every element has the bits of the unfused float arithmetic (a fused
// multiply-add would differ in the last place on many of them).
TEST(CpuGemm, EpilogueScaledResidualInRegistersHasTheUnfusedBits) {
  IsaScope scope;
  const int64_t M = 37, N = 200, K = 600;  // edge rows and columns, three KC blocks
  auto a = random_floats(M * K, 41), b = random_floats(K * N, 42), r = random_floats(M * N, 43);
  const float s = 0.9f;
  for (GemmIsa isa : runnable_isas()) {
    set_gemm_isa(isa);
    for (bool prepacked : {false, true}) {
      GemmArgs g;
      g.M = M, g.N = N, g.K = K, g.ldc = N;
      g.a = MatView{a.data(), DType::kF32, K, 1};
      g.b = MatView{b.data(), DType::kF32, N, 1};
      PackedB pb;
      if (prepacked) pb = pack_b(g.b, K, N, false), g.packed = &pb;
      std::vector<float> raw(M * N);
      g.c = raw.data();
      gemm(g);
      for (int order = 0; order < 4;
           ++order) {  // bit 0: load first in the mul, bit 1: acc first in the add
        GemmEpilogue ep;
        const int load = ep.load(r.data(), N, 1), scale = ep.constant(s);
        const int mul =
            order & 1 ? ep.binary(EpOp::kMul, load, scale) : ep.binary(EpOp::kMul, scale, load);
        const int acc = ep.acc();
        if (order & 2)
          ep.binary(EpOp::kAdd, acc, mul);
        else
          ep.binary(EpOp::kAdd, mul, acc);
        std::vector<float> c(M * N, -3.0f);
        g.c = c.data(), g.epilogue = &ep;
        gemm(g);
        g.epilogue = nullptr;
        for (int64_t i = 0; i < M * N; ++i) {
          volatile float t = s * r[i];  // rounded on its own
          const float want = raw[i] + t;
          ASSERT_EQ(std::memcmp(&c[i], &want, 4), 0)
              << gemm_isa_name(isa) << " prepacked " << prepacked << " order " << order << " at "
              << i << ": " << c[i] << " vs " << want;
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

}  // namespace
}  // namespace rlx::cpu
