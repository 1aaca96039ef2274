// llama.cpp's tokenizer test pairs (models/ggml-vocab-*.gguf.inp -> .out, written by its
// test-tokenizer-0 tooling): every string must give exactly the expected ids. Like llama.cpp's
// test, encoding adds no BOS/CLS and parses special-token text.
#include <fmt/format.h>
#include <gtest/gtest.h>

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

void check_pairs(const std::string& file) {
  fs::path path = gguf_dir() / file;
  if (!fs::exists(path))
    GTEST_SKIP() << "no conformance data at " << path << "";
  GgufFile f = read_gguf(path);
  std::optional<TokenizerSpec> spec = tokenizer_spec(f);
  ASSERT_TRUE(spec.has_value());
  Tokenizer tok(*spec);
  auto pairs = read_pairs(path);
  ASSERT_EQ(pairs.size(), 46u) << "the .inp file holds 46 strings";
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
  check_pairs("ggml-vocab-llama-spm.gguf");
}
TEST(GgufTokenizer, BertBgePairs) {
  check_pairs("ggml-vocab-bert-bge.gguf");
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
