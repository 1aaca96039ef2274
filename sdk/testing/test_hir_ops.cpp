// HIR transformer ops end to end on the cpu target (native, shared-IR and rewritten paths),
// each against a naive reference written here in double precision.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "rlx/core/dispatch.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::f32;
using test::run_text;
using test::values;

std::vector<float> random_values(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

void expect_all_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(CpuHirOps, SoftmaxLayerNormRmsNorm) {
  auto x = random_values(12, 1, 3);
  auto g = random_values(4, 2), b = random_values(4, 3);
  auto out = run_text(R"(graph @t(%x: f32[3,4], %g: f32[4], %b: f32[4]) {
  %s = Softmax(%x) {axis = -1} : f32[3,4]
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[3,4]
  %r = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[3,4]
  return %s, %l, %r
}
)",
                      {{"x", f32({3, 4}, x)}, {"g", f32({4}, g)}, {"b", f32({4}, b)}});
  std::vector<double> s, l, r;
  for (int i = 0; i < 3; ++i) {
    double mx = -1e9, sum = 0, mean = 0, var = 0, ms = 0;
    for (int j = 0; j < 4; ++j) mx = std::max(mx, (double)x[i * 4 + j]), mean += x[i * 4 + j] / 4.0, ms += (double)x[i * 4 + j] * x[i * 4 + j] / 4.0;
    for (int j = 0; j < 4; ++j) sum += std::exp(x[i * 4 + j] - mx), var += std::pow(x[i * 4 + j] - mean, 2) / 4.0;
    for (int j = 0; j < 4; ++j) {
      s.push_back(std::exp(x[i * 4 + j] - mx) / sum);
      l.push_back((x[i * 4 + j] - mean) / std::sqrt(var + 1e-5) * g[j] + b[j]);
      r.push_back(x[i * 4 + j] / std::sqrt(ms + 1e-6) * g[j]);
    }
  }
  expect_all_near(values(out.at("s")), s, 1e-6);
  expect_all_near(values(out.at("l")), l, 1e-5);
  expect_all_near(values(out.at("r")), r, 1e-5);
}

TEST(CpuHirOps, ActivationsGeluErfGeluTanhSilu) {
  std::vector<float> x = {-3, -1, -0.25f, 0, 0.5f, 2};
  auto out = run_text(R"(graph @t(%x: f32[6]) {
  %a = GELU(%x) : f32[6]
  %b = GELU(%x) {approximate = "tanh"} : f32[6]
  %c = SiLU(%x) : f32[6]
  return %a, %b, %c
}
)",
                      {{"x", f32({6}, x)}});
  std::vector<double> a, b, c;
  for (double v : x) {
    a.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    b.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
    c.push_back(v / (1 + std::exp(-v)));
  }
  expect_all_near(values(out.at("a")), a, 1e-6);
  expect_all_near(values(out.at("b")), b, 1e-6);
  expect_all_near(values(out.at("c")), c, 1e-6);
}

// A 16-bit activation is the f32 activation of the widened value rounded once (decision 81), as
// PyTorch computes one, not a rounding after each step of its formula: nearly every result is
// the f16 rounding of the exact value (f32's own error moves a near-tie by one ulp at most),
// where rounding each step misses it on a quarter of these inputs. Below x = -3 the formulas'
// 1 + erf and 1 + tanh cancel in f32 itself, so the inputs stop there.
TEST(CpuHirOps, HalfActivationsAreRoundedOnce) {
  constexpr int kN = 1024;
  std::vector<float> x(kN);
  for (int i = 0; i < kN; ++i)
    x[i] = static_cast<float>(static_cast<_Float16>(-3.0 + 9.0 * i / (kN - 1)));
  auto out = run_text(R"(graph @t(%x: f32[1024]) {
  %h = Cast(%x) {dtype = f16} : f16[1024]
  %a = GELU(%h) : f16[1024]
  %b = GELU(%h) {approximate = "tanh"} : f16[1024]
  %c = SiLU(%h) : f16[1024]
  %fa = Cast(%a) {dtype = f32} : f32[1024]
  %fb = Cast(%b) {dtype = f32} : f32[1024]
  %fc = Cast(%c) {dtype = f32} : f32[1024]
  return %fa, %fb, %fc
}
)",
                      {{"x", f32({kN}, x)}});
  auto round16 = [](double v) { return static_cast<double>(static_cast<_Float16>(v)); };
  auto check = [&](const char* name, auto exact) {
    std::vector<double> got = values(out.at(name));
    int misses = 0;
    for (int i = 0; i < kN; ++i) {
      double want = round16(exact(static_cast<double>(x[i])));
      if (got[i] == want) continue;
      ++misses;
      EXPECT_NEAR(got[i], want, 1e-3 * std::max(1.0, std::fabs(want)))
          << name << " at x = " << x[i];
    }
    EXPECT_LE(misses, kN / 200) << name << ": results not the exact value rounded once";
  };
  check("fa", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check("fb", [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  });
  check("fc", [](double v) { return v / (1 + std::exp(-v)); });
}

TEST(CpuHirOps, MatMulBroadcastsBatchDims) {
  auto a = random_values(2 * 3 * 4, 4), b = random_values(4 * 5, 5), c = random_values(4 * 2, 6);
  auto out = run_text(R"(graph @t(%a: f32[2,3,4], %b: f32[4,5], %c: f32[1,4,2]) {
  %x = MatMul(%a, %b) : f32[2,3,5]
  %y = MatMul(%a, %c) : f32[2,3,2]
  return %x, %y
}
)",
                      {{"a", f32({2, 3, 4}, a)}, {"b", f32({4, 5}, b)}, {"c", f32({1, 4, 2}, c)}});
  std::vector<double> x, y;
  for (int bb = 0; bb < 2; ++bb)
    for (int m = 0; m < 3; ++m) {
      for (int n = 0; n < 5; ++n) {
        double s = 0;
        for (int k = 0; k < 4; ++k) s += (double)a[(bb * 3 + m) * 4 + k] * b[k * 5 + n];
        x.push_back(s);
      }
    }
  for (int bb = 0; bb < 2; ++bb)
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 2; ++n) {
        double s = 0;
        for (int k = 0; k < 4; ++k) s += (double)a[(bb * 3 + m) * 4 + k] * c[k * 2 + n];
        y.push_back(s);
      }
  expect_all_near(values(out.at("x")), x, 1e-5);
  expect_all_near(values(out.at("y")), y, 1e-5);
}

TEST(CpuHirOps, LinearNativeInF32AndSharedIrInF16AgreeWithReference) {
  auto x = random_values(2 * 3, 7), w = random_values(4 * 3, 8), b = random_values(4, 9);
  std::vector<double> want;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 4; ++n) {
      double s = b[n];
      for (int k = 0; k < 3; ++k) s += (double)x[m * 3 + k] * w[n * 3 + k];
      want.push_back(s);
    }
  auto out = run_text(R"(graph @t(%x: f32[2,3], %w: f32[4,3], %b: f32[4]) {
  %y = Linear(%x, %w, %b) : f32[2,4]
  %xh = Cast(%x) {dtype = f16} : f16[2,3]
  %wh = Cast(%w) {dtype = f16} : f16[4,3]
  %bh = Cast(%b) {dtype = f16} : f16[4]
  %yh = Linear(%xh, %wh, %bh) : f16[2,4]
  return %y, %yh
}
)",
                      {{"x", f32({2, 3}, x)}, {"w", f32({4, 3}, w)}, {"b", f32({4}, b)}});
  expect_all_near(values(out.at("y")), want, 1e-6);
  expect_all_near(values(out.at("yh")), want, 4e-3);
}

TEST(CpuHirOps, EmbeddingAndRope) {
  auto table = random_values(5 * 4, 10);
  auto x = random_values(1 * 3 * 2 * 4, 11);
  auto out = run_text(R"(graph @t(%table: f32[5,4], %ids: i64[2], %x: f32[1,3,2,4], %pos: i64[3]) {
  %e = Embedding(%table, %ids) : f32[2,4]
  %r = RoPE(%x, %pos) {base = 100.0, seq_axis = 1} : f32[1,3,2,4]
  return %e, %r
}
)",
                      {{"table", f32({5, 4}, table)},
                       {"ids", Tensor::from<int64_t>(DType::kI64, {2}, {3, 1})},
                       {"x", f32({1, 3, 2, 4}, x)},
                       {"pos", Tensor::from<int64_t>(DType::kI64, {3}, {0, 5, 9})}});
  std::vector<double> e;
  for (int id : {3, 1})
    for (int j = 0; j < 4; ++j) e.push_back(table[id * 4 + j]);
  EXPECT_EQ(values(out.at("e")), e);
  std::vector<double> r(24);
  int pos[3] = {0, 5, 9};
  for (int s = 0; s < 3; ++s)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 2; ++i) {
        double ang = pos[s] * std::pow(100.0, -2.0 * i / 4);
        const float* v = &x[(s * 2 + h) * 4];
        r[(s * 2 + h) * 4 + i] = v[i] * std::cos(ang) - v[i + 2] * std::sin(ang);
        r[(s * 2 + h) * 4 + i + 2] = v[i + 2] * std::cos(ang) + v[i] * std::sin(ang);
      }
  expect_all_near(values(out.at("r")), r, 1e-5);
}

// Naive attention: q [B,H,Sq,D], k/v [B,Hkv,Sk,D]; causal aligns the last query with the last key.
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, int B, int H, int Hkv, int Sq,
                                    int Sk, int D, bool causal, const std::vector<int>& keep) {
  std::vector<double> out;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      int g = h / (H / Hkv);
      for (int i = 0; i < Sq; ++i) {
        std::vector<double> s(Sk);
        double mx = -INFINITY;
        for (int j = 0; j < Sk; ++j) {
          double d = 0;
          for (int t = 0; t < D; ++t) d += (double)q[((b * H + h) * Sq + i) * D + t] * k[((b * Hkv + g) * Sk + j) * D + t];
          s[j] = d / std::sqrt((double)D);
          bool masked = (causal && j > i + (Sk - Sq)) || (!keep.empty() && !keep[b * Sk + j]);
          if (masked) s[j] = -INFINITY;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& x : s) x = std::exp(x - mx), sum += x;
        for (int t = 0; t < D; ++t) {
          double acc = 0;
          for (int j = 0; j < Sk; ++j) acc += s[j] / sum * v[((b * Hkv + g) * Sk + j) * D + t];
          out.push_back(acc);
        }
      }
    }
  return out;
}

TEST(CpuHirOps, AttentionCausalWithGroupedKvHeadsAndDecodeOffset) {
  const int B = 1, H = 4, Hkv = 2, Sq = 2, Sk = 5, D = 8;
  auto q = random_values(B * H * Sq * D, 12), k = random_values(B * Hkv * Sk * D, 13), v = random_values(B * Hkv * Sk * D, 14);
  auto out = run_text(R"(graph @t(%q: f32[1,4,S,8], %k: f32[1,2,T,8], %v: f32[1,2,T,8]) {
  %o = Attention(%q, %k, %v) {mask = "causal"} : f32[1,4,S,8]
  return %o
}
)",
                      {{"q", f32({B, H, Sq, D}, q)}, {"k", f32({B, Hkv, Sk, D}, k)}, {"v", f32({B, Hkv, Sk, D}, v)}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, Hkv, Sq, Sk, D, true, {}), 1e-5);
}

TEST(CpuHirOps, AttentionPaddingMask) {
  const int B = 2, H = 2, S = 3, D = 4;
  auto q = random_values(B * H * S * D, 15), k = random_values(B * H * S * D, 16), v = random_values(B * H * S * D, 17);
  std::vector<int> keep = {1, 1, 0, 1, 0, 1};
  auto out = run_text(R"(graph @t(%q: f32[2,2,3,4], %k: f32[2,2,3,4], %v: f32[2,2,3,4], %m: i64[2,3]) {
  %o = Attention(%q, %k, %v, %m) {mask = "padding"} : f32[2,2,3,4]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, H, S, D}, k)}, {"v", f32({B, H, S, D}, v)},
                       {"m", Tensor::from<int64_t>(DType::kI64, {2, 3}, {1, 1, 0, 1, 0, 1})}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, H, S, S, D, false, keep), 1e-5);
}

// Long rows with a wide spread of scores: the online softmax of the GPU-style targets' native
// kernel rescales its running sum and output many times per row, and each rescale must be exact
// enough to land within 1e-5 of the float64 reference.
TEST(CpuHirOps, AttentionLongRowsWithWideScores) {
  const int B = 2, H = 4, S = 130, D = 64;
  auto q = random_values(B * H * S * D, 31, 2), k = random_values(B * H * S * D, 32, 2),
       v = random_values(B * H * S * D, 33);
  auto out = run_text(R"(graph @t(%q: f32[2,4,130,64], %k: f32[2,4,130,64], %v: f32[2,4,130,64]) {
  %o = Attention(%q, %k, %v) : f32[2,4,130,64]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, H, S, D}, k)}, {"v", f32({B, H, S, D}, v)}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, H, S, S, D, false, {}), 1e-5);
}

// From 16 queries a head on, the GPU-style targets' kernel stages keys and values in shared memory
// by tiles for groups of 64 queries: the last query tile and the last key tile here are partial,
// the kv heads grouped, and a causal group stops after the last tile its queries see.
TEST(CpuHirOps, AttentionCausalOverPartialQueryAndKeyTiles) {
  const int B = 1, H = 4, Hkv = 2, Sq = 70, Sk = 75, D = 24;
  auto q = random_values(B * H * Sq * D, 51, 2), k = random_values(B * Hkv * Sk * D, 52, 2),
       v = random_values(B * Hkv * Sk * D, 53);
  auto out = run_text(R"(graph @t(%q: f32[1,4,70,24], %k: f32[1,2,75,24], %v: f32[1,2,75,24]) {
  %o = Attention(%q, %k, %v) {mask = "causal"} : f32[1,4,70,24]
  return %o
}
)",
                      {{"q", f32({B, H, Sq, D}, q)}, {"k", f32({B, Hkv, Sk, D}, k)}, {"v", f32({B, Hkv, Sk, D}, v)}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, Hkv, Sq, Sk, D, true, {}), 1e-5);
}

// 128-element heads fit 16 keys to a shared tile (16 KB); 50 keys leave the last tile partial.
TEST(CpuHirOps, AttentionWideHeadsOverSmallKeyTiles) {
  const int B = 1, H = 2, S = 50, D = 128;
  auto q = random_values(B * H * S * D, 54), k = random_values(B * H * S * D, 55), v = random_values(B * H * S * D, 56);
  auto out = run_text(R"(graph @t(%q: f32[1,2,50,128], %k: f32[1,2,50,128], %v: f32[1,2,50,128]) {
  %o = Attention(%q, %k, %v) : f32[1,2,50,128]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, H, S, D}, k)}, {"v", f32({B, H, S, D}, v)}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, H, S, S, D, false, {}), 1e-5);
}

// A padding mask over 40 queries a head (tiled on the GPU-style targets); batch 0 masks every key,
// so its rows are the mean of V, as in AttentionWithEveryKeyMaskedAveragesTheValues.
TEST(CpuHirOps, AttentionPaddingOverTiledQueriesWithAFullyMaskedBatch) {
  const int B = 2, H = 2, S = 40, D = 16;
  auto q = random_values(B * H * S * D, 57), k = random_values(B * H * S * D, 58), v = random_values(B * H * S * D, 59);
  std::vector<int> keep(B * S, 0);
  std::vector<int64_t> mask(B * S, 0);
  for (int j = 0; j < S; ++j) keep[S + j] = (j % 3 != 1), mask[S + j] = keep[S + j];
  auto out = run_text(R"(graph @t(%q: f32[2,2,40,16], %k: f32[2,2,40,16], %v: f32[2,2,40,16], %m: i64[2,40]) {
  %o = Attention(%q, %k, %v, %m) {mask = "padding"} : f32[2,2,40,16]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, H, S, D}, k)}, {"v", f32({B, H, S, D}, v)},
                       {"m", Tensor::from<int64_t>(DType::kI64, {B, S}, mask)}});
  std::vector<double> want = naive_attention(q, k, v, B, H, H, S, S, D, false, keep);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < S; ++i)
      for (int d = 0; d < D; ++d) {
        double mean = 0;
        for (int j = 0; j < S; ++j) mean += v[(h * S + j) * D + d];
        want[(h * S + i) * D + d] = mean / S;
      }
  expect_all_near(values(out.at("o")), want, 1e-5);
}

// A bool padding mask of one row, broadcast over the batch, with grouped kv heads.
TEST(CpuHirOps, AttentionBoolMaskBroadcastOverTheBatch) {
  const int B = 2, H = 4, Hkv = 2, S = 5, D = 8;
  auto q = random_values(B * H * S * D, 41), k = random_values(B * Hkv * S * D, 42), v = random_values(B * Hkv * S * D, 43);
  Tensor m(DType::kBool, {1, S});
  const std::vector<int> row = {1, 0, 1, 1, 0};
  for (int j = 0; j < S; ++j) m.as<uint8_t>()[j] = static_cast<uint8_t>(row[j]);
  std::vector<int> keep = row;
  keep.insert(keep.end(), row.begin(), row.end());
  auto out = run_text(R"(graph @t(%q: f32[2,4,5,8], %k: f32[2,2,5,8], %v: f32[2,2,5,8], %m: bool[1,5]) {
  %o = Attention(%q, %k, %v, %m) {mask = "padding"} : f32[2,4,5,8]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, Hkv, S, D}, k)}, {"v", f32({B, Hkv, S, D}, v)}, {"m", m}});
  expect_all_near(values(out.at("o")), naive_attention(q, k, v, B, H, Hkv, S, S, D, false, keep), 1e-5);
}

// f32 Attention is one native kernel on every target that runs these suites (the cpu's and the
// GPU-style targets' fused kernels), not the decomposition's four kernels.
TEST(CpuHirOps, AttentionAtF32IsNative) {
  const char* ir = R"(graph @t(%q: f32[1,2,3,4], %k: f32[1,2,3,4], %v: f32[1,2,3,4]) {
  %o = Attention(%q, %k, %v) {mask = "causal"} : f32[1,2,3,4]
  return %o
}
)";
  DispatchResult r = dispatch(parse_graph(ir, "test.rlx"), *test::target_under_test());
  bool found = false;
  for (const auto& e : r.report.entries)
    if (e.op == "Attention") {
      found = true;
      EXPECT_EQ(e.path, LoweringPath::kNative) << (e.refused.empty() ? "" : e.refused[0]);
    }
  EXPECT_TRUE(found);
}

// A batch whose attention_mask is all zeros: Hugging Face adds the dtype's lowest value to masked
// scores, so every score of the row is equal and the weights are uniform: the output is the mean
// of V (finite), not 0/0. The other batch keeps its normal masked attention.
TEST(CpuHirOps, AttentionWithEveryKeyMaskedAveragesTheValues) {
  const int B = 2, H = 2, S = 3, D = 4;
  auto q = random_values(B * H * S * D, 21), k = random_values(B * H * S * D, 22), v = random_values(B * H * S * D, 23);
  std::vector<int> keep = {0, 0, 0, 1, 0, 1};
  auto out = run_text(R"(graph @t(%q: f32[2,2,3,4], %k: f32[2,2,3,4], %v: f32[2,2,3,4], %m: i64[2,3]) {
  %o = Attention(%q, %k, %v, %m) {mask = "padding"} : f32[2,2,3,4]
  return %o
}
)",
                      {{"q", f32({B, H, S, D}, q)}, {"k", f32({B, H, S, D}, k)}, {"v", f32({B, H, S, D}, v)},
                       {"m", Tensor::from<int64_t>(DType::kI64, {2, 3}, {0, 0, 0, 1, 0, 1})}});
  std::vector<double> want = naive_attention(q, k, v, B, H, H, S, S, D, false, keep);
  for (int h = 0; h < H; ++h)  // batch 0: every row is the mean of its head's V
    for (int i = 0; i < S; ++i)
      for (int d = 0; d < D; ++d) {
        double mean = 0;
        for (int j = 0; j < S; ++j) mean += v[((0 * H + h) * S + j) * D + d];
        want[((0 * H + h) * S + i) * D + d] = mean / S;
      }
  expect_all_near(values(out.at("o")), want, 1e-5);
}

TEST(CpuHirOps, ConvThroughTheIm2colRewrite) {
  const int N = 2, C = 2, Hh = 5, W = 4, O = 3, KH = 3, KW = 2, SH = 2, SW = 1, PT = 1, PL = 0, PB = 1, PR = 1;
  auto x = random_values(N * C * Hh * W, 18), w = random_values(O * C * KH * KW, 19), b = random_values(O, 20);
  int OH = (Hh + PT + PB - KH) / SH + 1, OW = (W + PL + PR - KW) / SW + 1;
  std::string ir = fmt::format(R"(graph @t(%x: f32[N,2,5,4], %w: f32[3,2,3,2], %b: f32[3]) {{
  %y = Conv(%x, %w, %b) {{pads = [1, 0, 1, 1], strides = [2, 1]}} : f32[N,3,{},{}]
  return %y
}}
)",
                               OH, OW);
  auto out = run_text(ir, {{"x", f32({N, C, Hh, W}, x)}, {"w", f32({O, C, KH, KW}, w)}, {"b", f32({O}, b)}});
  std::vector<double> want;
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o)
      for (int i = 0; i < OH; ++i)
        for (int j = 0; j < OW; ++j) {
          double s = b[o];
          for (int c = 0; c < C; ++c)
            for (int a = 0; a < KH; ++a)
              for (int bb = 0; bb < KW; ++bb) {
                int y = i * SH + a - PT, xx = j * SW + bb - PL;
                if (y < 0 || y >= Hh || xx < 0 || xx >= W) continue;
                s += (double)x[((n * C + c) * Hh + y) * W + xx] * w[((o * C + c) * KH + a) * KW + bb];
              }
          want.push_back(s);
        }
  expect_all_near(values(out.at("y")), want, 1e-5);
}

// MaxPool and AveragePool through their decomposition (pad, window gather, reduction), with
// asymmetric pads and strides, against windows walked here; negative inputs show that MaxPool's
// padding never wins and that AveragePool's counts as zeros.
TEST(CpuHirOps, PoolsOverPaddedStridedWindows) {
  const int N = 2, C = 3, H = 5, W = 6, KH = 3, KW = 2, SH = 2, SW = 2, PT = 1, PL = 0, PB = 1,
            PR = 1;
  const int OH = (H + PT + PB - KH) / SH + 1, OW = (W + PL + PR - KW) / SW + 1;
  auto x = random_values(N * C * H * W, 21, 2);
  for (float& v : x) v -= 2.5f;  // mostly negative
  const std::string ir = fmt::format(R"(graph @t(%x: f32[2,3,5,6]) {{
  %m = MaxPool(%x) {{kernel_shape = [3, 2], pads = [1, 0, 1, 1], strides = [2, 2]}} : f32[2,3,{0},{1}]
  %a = AveragePool(%x) {{kernel_shape = [3, 2], pads = [1, 0, 1, 1], strides = [2, 2]}} : f32[2,3,{0},{1}]
  return %m, %a
}}
)",
                                     OH, OW);
  auto out = run_text(ir, {{"x", f32({N, C, H, W}, x)}});
  std::vector<double> want_max, want_avg;
  for (int n = 0; n < N * C; ++n)
    for (int i = 0; i < OH; ++i)
      for (int j = 0; j < OW; ++j) {
        double top = -INFINITY, sum = 0;
        for (int a = 0; a < KH; ++a)
          for (int b = 0; b < KW; ++b) {
            const int y = i * SH + a - PT, xx = j * SW + b - PL;
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
            top = std::max(top, static_cast<double>(x[(n * H + y) * W + xx]));
            sum += x[(n * H + y) * W + xx];
          }
        want_max.push_back(top);
        want_avg.push_back(sum / (KH * KW));
      }
  expect_all_near(values(out.at("m")), want_max, 1e-6);
  expect_all_near(values(out.at("a")), want_avg, 1e-5);
  EXPECT_NE(test::compile_error(R"(graph @t(%x: f32[1,1,4,4]) {
  %m = MaxPool(%x) {kernel_shape = [2, 2], pads = [2, 0, 0, 0]} : f32[1,1,5,3]
  return %m
}
)",
                                test::target_under_test())
                .find("padding only"),
            std::string::npos);
}

}  // namespace
}  // namespace rlx
