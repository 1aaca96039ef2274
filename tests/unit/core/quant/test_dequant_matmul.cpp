// DequantMatMul: type inference and verification, and the cpu target's native kernel against
// dequantize-then-multiply in double precision, for every block format.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/quant.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

// Random rows of blocks whose scales are sane f16 (or f32) values.
std::vector<uint8_t> random_rows(const quant::QTypeInfo& q, int64_t rows, int64_t k,
                                 std::mt19937& rng) {
  int64_t rb = *quant::row_bytes(q.type, k);
  std::vector<uint8_t> w(rows * rb);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
  // Overwrite anything that decodes to a non-finite value with a small f16/f32.
  std::vector<float> tmp(k);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = w.data() + r * rb;
    for (int tries = 0; tries < 1000; ++tries) {
      quant::dequantize(q.type, row, tmp.data(), k);
      int64_t bad = -1;
      for (int64_t i = 0; i < k && bad < 0; ++i)
        if (!std::isfinite(tmp[i]) || std::abs(tmp[i]) > 1e4) bad = i;
      if (bad < 0) break;
      // Re-roll the block holding the bad element.
      int64_t blk = bad / q.block_size;
      for (int64_t j = 0; j < q.block_bytes; ++j)
        row[blk * q.block_bytes + j] = static_cast<uint8_t>(byte(rng) & 0x3F);  // small exponents
    }
  }
  return w;
}

TEST(DequantMatMul, EveryFormatOnCpuMatchesDequantizeThenMultiply) {
  auto cpu = test::cpu_target();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // A few rows (the transposed product) and many (W packed as the GEMM's operand: 512 rows or
  // more), W's rows decoded in two chunks; then, for one format, a K so long that W's decoded
  // copy is cut into rounds (4 MB each: 256 rows at K = 4096), each its own product.
  struct Case {
    int64_t S, N, K;  // K = 0: two blocks of the format, at least 64
    bool every_format;
  };
  for (const Case c : {Case{3, 5, 0, true}, Case{300, 150, 0, true}, Case{256, 300, 4096, false}})
    for (const quant::QTypeInfo& q : quant::all_qtypes()) {
      if (!c.every_format && q.type != quant::QType::kQ4_0) continue;
      const int64_t S = c.S, N = c.N;
      // Whole blocks of every format (rlx's i4_g128 has 128).
      const int64_t K = c.K ? c.K : q.block_size >= 128 ? 2 * q.block_size : 64, B = 2;
      const int64_t rb = *quant::row_bytes(q.type, K);
      std::vector<uint8_t> w = random_rows(q, N, K, rng);
      std::vector<float> x(B * S * K);
      for (auto& v : x) v = u(rng);
      std::string ir = fmt::format(R"(graph @t(%x: f32[B,{},{}], %w: u8[{},{}]) {{
  %y = DequantMatMul(%x, %w) {{qtype = "{}"}} : f32[B,{},{}]
  return %y
}}
)",
                                   S, K, N, rb, q.name, S, N);
      Graph g = parse_graph(ir);
      Session session(cpu);
      CompiledModel m = session.compile(g);
      ASSERT_EQ(m.report().entries.size(), 1u);
      EXPECT_EQ(m.report().entries[0].path, LoweringPath::kNative) << q.name;
      Tensor wt(DType::kU8, {N, rb});
      std::memcpy(wt.data(), w.data(), w.size());
      NamedTensors out = m.run({{"x", Tensor::from(DType::kF32, {B, S, K}, x)}, {"w", wt}});
      const Tensor& y = out.at("y");
      ASSERT_EQ(y.shape(), (std::vector<int64_t>{B, S, N}));
      std::vector<float> row(K);
      double worst = 0;
      for (int64_t n = 0; n < N; ++n) {
        quant::dequantize(q.type, w.data() + n * rb, row.data(), K);
        for (int64_t m_ = 0; m_ < B * S; ++m_) {
          double want = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            want += static_cast<double>(x[m_ * K + k]) * row[k];
            mag += std::abs(static_cast<double>(x[m_ * K + k]) * row[k]);
          }
          double err = std::abs(y.as<float>()[m_ * N + n] - want) / std::max(1.0, mag);
          worst = std::max(worst, err);
        }
      }
      EXPECT_LT(worst, 1e-6) << q.name << " rows " << B * S;
    }
}

// {activations = "q8"}: x rounded to 8-bit blocks (d = max|x| / 127 over 32 elements, or 256
// for the K formats; q = round(x * (1 / d))), then multiplied exactly by the decoded weights.
TEST(DequantMatMul, Q8ActivationsMatchTheRoundedReference) {
  auto cpu = test::cpu_target();
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  int formats = 0;
  for (const quant::QTypeInfo& q : quant::all_qtypes()) {
    if (q.block_size != 32 && q.block_size != 256) continue;
    ++formats;
    const int64_t K = q.block_size == 256 ? 512 : 96, N = 70, M = 5;  // 32-element formats here
    const int64_t rb = *quant::row_bytes(q.type, K);
    std::vector<uint8_t> w = random_rows(q, N, K, rng);
    std::vector<float> x(M * K);
    for (auto& v : x) v = normal(rng);
    std::string ir = fmt::format(R"(graph @t(%x: f32[{},{}], %w: u8[{},{}]) {{
  %y = DequantMatMul(%x, %w) {{activations = "q8", qtype = "{}"}} : f32[{},{}]
  return %y
}}
)",
                                 M, K, N, rb, q.name, M, N);
    Session session(cpu);
    CompiledModel m = session.compile(parse_graph(ir));
    EXPECT_EQ(m.report().entries.at(0).path, LoweringPath::kNative) << q.name;
    Tensor wt(DType::kU8, {N, rb});
    std::memcpy(wt.data(), w.data(), w.size());
    for (int64_t rows : {M, int64_t{1}}) {  // prefill-like and decode-like
      std::string g1 = ir;
      if (rows == 1) {
        g1 = fmt::format(R"(graph @t(%x: f32[1,{}], %w: u8[{},{}]) {{
  %y = DequantMatMul(%x, %w) {{activations = "q8", qtype = "{}"}} : f32[1,{}]
  return %y
}}
)",
                         K, N, rb, q.name, N);
      }
      CompiledModel c = session.compile(parse_graph(g1));
      std::vector<float> xs(x.begin(), x.begin() + rows * K);
      NamedTensors out = c.run({{"x", Tensor::from(DType::kF32, {rows, K}, xs)}, {"w", wt}});
      const float* y = out.at("y").as<float>();
      std::vector<float> row(K);
      double worst = 0;
      for (int64_t i = 0; i < rows; ++i) {
        std::vector<double> xr(K);
        for (int64_t b0 = 0; b0 < K; b0 += q.block_size) {
          float amax = 0;
          for (int64_t j = 0; j < q.block_size; ++j)
            amax = std::max(amax, std::abs(x[i * K + b0 + j]));
          const float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
          for (int64_t j = 0; j < q.block_size; ++j)
            xr[b0 + j] = static_cast<double>(d) * std::nearbyint(x[i * K + b0 + j] * id);
        }
        for (int64_t n = 0; n < N; ++n) {
          quant::dequantize(q.type, w.data() + n * rb, row.data(), K);
          double want = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) want += xr[k] * row[k], mag += std::abs(xr[k] * row[k]);
          worst = std::max(worst, std::abs(y[i * N + n] - want) / std::max(1e-30, mag));
        }
      }
      EXPECT_LT(worst, 1e-6) << q.name << " rows " << rows;
    }
  }
  // Every format of 32 or 256 elements: the 13 ggml ones but the three plain float ones, and
  // rlx's i4_g32.
  EXPECT_EQ(formats, 14);
}

// An embedding table kept quantized: gather the rows, then decode only those.
// RLX_PROFILE=1 on cpu: one row per kind of kernel, block products by format and weight shape
// (a decoder's head and its layers are different rows), printed when the model goes.
TEST(DequantMatMul, CpuProfileNamesTheFormatAndWeightShape) {
  const quant::QTypeInfo& q = *quant::find_qtype("q8_0");
  const int64_t K = 64, N = 3, rb = *quant::row_bytes(q.type, K);
  std::mt19937 rng(9);
  std::vector<uint8_t> w = random_rows(q, N, K, rng);
  Graph g = parse_graph(fmt::format(R"(graph @t(%x: f32[1,{}], %w: u8[{},{}]) {{
  %y = DequantMatMul(%x, %w) {{qtype = "q8_0"}} : f32[1,{}]
  return %y
}}
)",
                                    K, N, rb, N));
  ::setenv("RLX_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  {
    Session session(test::cpu_target());
    CompiledModel m = session.compile(g);
    Tensor wt(DType::kU8, {N, rb});
    std::memcpy(wt.data(), w.data(), w.size());
    std::vector<float> x(K, 0.5f);
    for (int run = 0; run < 2; ++run)
      m.run({{"x", Tensor::from(DType::kF32, {1, K}, x)}, {"w", wt}});
  }
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("RLX_PROFILE");
  EXPECT_NE(err.find("rlx profile (cpu)"), std::string::npos) << err;
  // Two runs: the first is left out of the profile.
  EXPECT_NE(err.find("over runs 2 to 2 (the first is left out)"), std::string::npos) << err;
  EXPECT_NE(err.find(fmt::format("       1  native:DequantMatMul q8_0 [{}, {} B]\n", N, rb)),
            std::string::npos)
      << err;
}

TEST(DequantizeRows, GatheredRowsOfEveryFormat) {
  auto cpu = test::cpu_target();
  std::mt19937 rng(9);
  for (const quant::QTypeInfo& q : quant::all_qtypes()) {
    const int64_t K = q.block_size >= 128 ? q.block_size : 64, V = 7;
    const int64_t rb = *quant::row_bytes(q.type, K);
    std::vector<uint8_t> table = random_rows(q, V, K, rng);
    std::string ir = fmt::format(R"(graph @t(%ids: i64[B,2], %w: u8[{},{}]) {{
  %r = Embedding(%w, %ids) : u8[B,2,{}]
  %y = DequantizeRows(%r) {{k = {}, qtype = "{}"}} : f32[B,2,{}]
  return %y
}}
)",
                                 V, rb, rb, K, q.name, K);
    Session session(cpu);
    CompiledModel m = session.compile(parse_graph(ir));
    Tensor wt(DType::kU8, {V, rb});
    std::memcpy(wt.data(), table.data(), table.size());
    std::vector<int64_t> ids = {6, 0, 3, 3};
    NamedTensors out = m.run({{"ids", Tensor::from(DType::kI64, {2, 2}, ids)}, {"w", wt}});
    const Tensor& y = out.at("y");
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 2, K}));
    std::vector<float> row(K);
    for (size_t i = 0; i < ids.size(); ++i) {
      quant::dequantize(q.type, table.data() + ids[i] * rb, row.data(), K);
      EXPECT_EQ(0, std::memcmp(row.data(), y.as<float>() + i * K, K * 4)) << q.name << " row " << i;
    }
  }
}

TEST(DequantMatMul, InferenceChecksTheRowSize) {
  auto bad = [](const std::string& body) {
    try {
      parse_graph("graph @t(%x: f32[2,64], %w: u8[3,68]) {\n" + body + "  return %y\n}\n");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(bad("  %y = DequantMatMul(%x, %w) {qtype = \"q8_0\"} : f32[2,3]\n"), "");
  EXPECT_NE(bad("  %y = DequantMatMul(%x, %w) {qtype = \"q4_0\"} : f32[2,3]\n")
                .find("takes 36 bytes, w has 68"),
            std::string::npos);
  EXPECT_NE(
      bad("  %y = DequantMatMul(%x, %w) {activations = \"q4\", qtype = \"q8_0\"} : f32[2,3]\n")
          .find("activations must be \"f32\" or \"q8\""),
      std::string::npos);
  EXPECT_NE(bad("  %y = DequantMatMul(%x, %w) {qtype = \"q9_9\"} : f32[2,3]\n")
                .find("not a known block format"),
            std::string::npos);
  EXPECT_NE(bad("  %y = DequantMatMul(%x, %w) {qtype = \"q4_k\"} : f32[2,3]\n")
                .find("not a whole number of q4_k blocks"),
            std::string::npos);
  EXPECT_NE(OpRegistry::instance().find("DequantMatMul"), nullptr);
}

}  // namespace
}  // namespace rlx
