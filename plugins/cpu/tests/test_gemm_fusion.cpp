// The cpu plugin's LIR fusion passes (gemm_epilogue_fusion.h) end to end: a program run with
// and without fuse_gemm_epilogues must give the same result, against a float64 reference;
// and what `rlx explain` says of the products and attention those kernels run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "gemm.h"
#include "gemm_bf16.h"
#include "gemm_epilogue_fusion.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"
#include "rlx/core/quant.h"
#include "rlx/core/runtime.h"
#include "test_gemm_support.h"
#include "test_support.h"

namespace rlx::cpu {
namespace {

using gemm_test::gelu_erf;
using gemm_test::gelu_tanh;
using gemm_test::random_floats;
using gemm_test::reference;

// ---- LIR fusion, end to end through the cpu plugin ------------------------------------------

lir::Program lower(const std::string& ir) {
  auto target = test::cpu_target();
  DispatchResult d = dispatch(parse_graph(ir, "test.rlx"), *target);
  run_default_passes(d.graph);
  return lower_to_lir(d.graph);
}

// `rlx explain` says what runs a bf16 product: the bf16 GEMM on AMX tiles or AVX512-BF16 where
// this CPU has one and K fills whole tiles, else the f32 GEMM on widened operands.
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
    const std::string want = bf16_unit() == Bf16Unit::kNone ? "widened to f32 for the f32 GEMM"
                             : K % 32 == 0
                                 ? fmt::format("on {}, f32 sums", bf16_unit_name(bf16_unit()))
                                 : "(K = 40 is not a multiple of 32";
    EXPECT_NE(note.find(want), std::string::npos) << note;
  }
}

// And bf16 attention: on the bf16 unit (AMX tiles where granted, else AVX512-BF16) where the head
// sizes fill whole tiles, else the f32 kernel on widened values; the claim says which.
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
    const bool unit = bf16_unit() != Bf16Unit::kNone && D % 32 == 0;
    const std::string want = unit ? fmt::format("bf16 attention on {}", bf16_unit_name(bf16_unit()))
                                  : "f32 attention: bf16 q widened";
    EXPECT_NE(note.find(want), std::string::npos) << note;
  }
}

// `p` through the fusion passes into `fused`, which must merge exactly `merges` kernels away.
void fuse_exactly(const lir::Program& p, int merges, lir::Program* fused) {
  *fused = p;
  ASSERT_EQ(fuse_gemm_epilogues(*fused), merges) << lir::print_program(p);
  ASSERT_EQ(fused->kernels.size(), p.kernels.size() - merges) << lir::print_program(*fused);
}

// A 16-bit Linear (what amp-bf16 and amp-f16 narrow) runs natively: the product rounded to the
// type, then the bias added and rounded again, as its decomposition computes; on the bf16 GEMM's
// unit where K fills its tiles (K = 64), else through the f32 GEMM (K = 40, and f16 always).
// Against a float64 product of the same 16-bit values, rounded the same two times: a result may
// differ by one unit of the last place where the f32 sum and the float64 one round apart, and
// rarely.
TEST(CpuGemmFusion, NarrowLinearIsNativeAndRoundsAsItsDecomposition) {
  const int64_t M = 37, N = 40;
  for (const DType dt : {DType::kBF16, DType::kF16})
    for (const int64_t K : {64, 40}) {
      const char* ty = dt == DType::kBF16 ? "bf16" : "f16";
      const std::string ir =
          fmt::format(R"(graph @t(%x: {3}[{0},{1}], %w: {3}[{2},{1}], %b: {3}[{2}]) {{
  %y = Linear(%x, %w, %b) : {3}[{0},{2}]
  return %y
}}
)",
                      M, K, N, ty);
      auto target = test::cpu_target();
      DispatchResult d = dispatch(parse_graph(ir, "test.rlx"), *target);
      ASSERT_EQ(d.report.entries.size(), 1u);
      EXPECT_EQ(d.report.entries[0].path, LoweringPath::kNative) << d.report.to_text();
      EXPECT_NE(d.report.entries[0].detail.find("bias added to the product rounded"),
                std::string::npos)
          << d.report.entries[0].detail;
      run_default_passes(d.graph);
      const lir::Program p = lower_to_lir(d.graph);
      auto to16 = [&](float v) { return dt == DType::kBF16 ? f32_to_bf16(v) : f32_to_f16(v); };
      auto from16 = [&](uint16_t h) { return dt == DType::kBF16 ? bf16_to_f32(h) : f16_to_f32(h); };
      auto narrow = [&](const std::vector<float>& v) {
        std::vector<uint16_t> h(v.size());
        for (size_t i = 0; i < v.size(); ++i) h[i] = to16(v[i]);
        return h;
      };
      const auto x = narrow(random_floats(M * K, 31)), w = narrow(random_floats(N * K, 32)),
                 b = narrow(random_floats(N, 33));
      std::vector<uint16_t> y(static_cast<size_t>(M * N), 0);
      auto exe = target->compile(p);
      std::vector<void*> ptrs(p.buffers.size(), nullptr);
      const std::map<std::string, const uint16_t*> in{
          {"x", x.data()}, {"w", w.data()}, {"b", b.data()}};
      for (auto& [name, buf] : p.inputs) ptrs[buf] = const_cast<uint16_t*>(in.at(name));
      ptrs[p.outputs[0].second] = y.data();
      exe->run(ptrs);
      int exact = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double dot = 0;
          for (int64_t k = 0; k < K; ++k)
            dot += double(from16(x[i * K + k])) * double(from16(w[j * K + k]));
          const uint16_t want = to16(from16(to16(static_cast<float>(dot))) + from16(b[j]));
          const uint16_t got = y[i * N + j];
          exact += got == want;
          const int apart = std::abs(int(got & 0x7FFF) - int(want & 0x7FFF));
          ASSERT_TRUE((got & 0x8000) == (want & 0x8000) && apart <= 1)
              << ty << " K=" << K << " at " << i << "," << j << ": " << from16(got) << " vs "
              << from16(want);
        }
      EXPECT_GE(exact, M * N * 98 / 100) << ty << " K=" << K;
    }
}

// Runs `p` on the cpu plugin with inputs by name; returns the first output.
std::vector<float> run_program(const lir::Program& p,
                               const std::map<std::string, std::vector<float>>& in) {
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
    const std::string ir = fmt::format(
        R"(graph @t(%x: f32[{0},{1}], %w: f32[{1},{2}], %b: f32[{2}], %r: f32[{0},{2}]) {{
  %y = MatMul(%x, %w) : f32[{0},{2}]
  %z = Add(%y, %b) : f32[{0},{2}]
  %g = GELU(%z) {{approximate = "{3}"}} : f32[{0},{2}]
  %o = Add(%g, %r) : f32[{0},{2}]
  return %o
}}
)",
        M, K, N, approx);
    lir::Program p = lower(ir);
    lir::Program fused = p;
    ASSERT_EQ(fuse_gemm_epilogues(fused), 1) << lir::print_program(p);
    EXPECT_EQ(fused.kernels.size(), p.kernels.size() - 1);
    // The bias add, read twice by the GELU, is computed in the GELU's kernel (no loop of its
    // own), so the call takes the whole chain; its bias load is one operand, and the program
    // comes out as acc + b, one GELU step, + r.
    const auto* call = std::get_if<lir::CallKernel>(&fused.kernels.back());
    ASSERT_TRUE(call && fused.kernels.size() == 1) << lir::print_program(fused);
    GemmEpilogue ep;
    int loads = 0;
    decode_epilogue(std::get<std::string>(call->attrs.at("epilogue")), -1, ep,
                    [&](int32_t, int64_t, int64_t, int64_t) { ++loads; });
    EXPECT_EQ(loads, 2);
    if (std::string(approx) == "none") {
      EXPECT_EQ(ep.num_steps, 6) << std::get<std::string>(call->attrs.at("epilogue"));
      EXPECT_EQ(ep.steps[3].op, EpOp::kGeluErf);
    }
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
  const std::string ir =
      fmt::format(R"(graph @t(%x: f32[{0},{1}], %w: f32[{2},{1}], %b: f32[{2}]) {{
  %y = Linear(%x, %w, %b) : f32[{0},{2}]
  %g = GELU(%y) : f32[{0},{2}]
  return %g
}}
)",
                  M, K, N);
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
    const std::string ir =
        fmt::format(R"(graph @t(%x: f32[{0},{1}], %w: u8[{2},68], %r: f32[{0},{2}]) {{
  %y = DequantMatMul(%x, %w) {{qtype = "q8_0"}} : f32[{0},{2}]
  %g = GELU(%y) {{approximate = "tanh"}} : f32[{0},{2}]
  %o = Mul(%g, %r) : f32[{0},{2}]
  return %o
}}
)",
                    M, K, N);
    lir::Program p = lower(ir);
    ASSERT_EQ(fuse_gemm_epilogues(p), 1) << lir::print_program(p);
    auto x = random_floats(M * K, 41), r = random_floats(M * N, 42);
    auto exe = test::cpu_target()->compile(p);
    std::vector<void*> ptrs(p.buffers.size(), nullptr);
    for (auto& [name, b] : p.inputs)
      ptrs[b] = name == "x"   ? static_cast<void*>(x.data())
                : name == "r" ? static_cast<void*>(r.data())
                              : static_cast<void*>(w.data());
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
    lir::Program p = lower(ir), fused;
    ASSERT_NO_FATAL_FAILURE(fuse_exactly(p, 2, &fused));
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
  lir::Program p = lower(ir), fused;
  ASSERT_NO_FATAL_FAILURE(fuse_exactly(p, 4, &fused));
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
  const std::string ir = fmt::format(
      R"(graph @t(%x: f32[{0},{1},{2}], %w: f32[{2},{3}], %b: f32[{3}], %r: f32[{0},{1},{3}]) {{
  %y = MatMul(%x, %w) : f32[{0},{1},{3}]
  %z = Add(%y, %b) : f32[{0},{1},{3}]
  %o = Add(%z, %r) : f32[{0},{1},{3}]
  return %o
}}
)",
      B, M, K, N);
  lir::Program p = lower(ir);
  ASSERT_EQ(fuse_gemm_epilogues(p), 1) << lir::print_program(p);
  auto x = random_floats(B * M * K, 20), w = random_floats(K * N, 21), b = random_floats(N, 22),
       r = random_floats(B * M * N, 23);
  auto got = run_program(p, {{"x", x}, {"w", w}, {"b", b}, {"r", r}});
  auto prod = reference(B * M, N, K, {x.begin(), x.end()}, K, 1, {w.begin(), w.end()}, N, 1);
  for (int64_t i = 0; i < B * M * N; ++i) ASSERT_NEAR(got[i], prod[i] + b[i % N] + r[i], 1e-5) << i;
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
)",
                        "weights.rlx");
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

// RLX_PROFILE=kernels gives each kernel its own row: two products of one program (a training
// step's several dot_generals), which RLX_PROFILE=1 adds up in one row, apart, each named by its
// index and operand shapes.
TEST(CpuProfile, PerKernelRowsTellProductsApart) {
  Graph g = parse_graph(R"(graph @t(%x: f32[4,8], %w: f32[8,3], %v: f32[3,5]) {
  %y = MatMul(%x, %w) : f32[4,3]
  %z = MatMul(%y, %v) : f32[4,5]
  return %z
}
)");
  auto profile = [&](const char* mode) {
    ::setenv("RLX_PROFILE", mode, 1);
    testing::internal::CaptureStderr();
    {
      Session session(test::cpu_target());
      CompiledModel m = session.compile(g);
      for (int run = 0; run < 3; ++run)
        m.run({{"x", Tensor(DType::kF32, {4, 8})},
               {"w", Tensor(DType::kF32, {8, 3})},
               {"v", Tensor(DType::kF32, {3, 5})}});
    }
    ::unsetenv("RLX_PROFILE");
    return testing::internal::GetCapturedStderr();
  };
  const std::string kinds = profile("1"), kernels = profile("kernels");
  EXPECT_NE(kinds.find("in 1 kinds of kernel over runs 2 to 3"), std::string::npos) << kinds;
  EXPECT_NE(kinds.find("       4  native:MatMul\n"), std::string::npos) << kinds;
  EXPECT_NE(kernels.find("in 2 kernels over runs 2 to 3"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("       2  k0_native:MatMul [4,8] [8,3]\n"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("       2  k1_native:MatMul [4,3] [3,5]\n"), std::string::npos) << kernels;
}

}  // namespace
}  // namespace rlx::cpu
