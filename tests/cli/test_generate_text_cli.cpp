// What `rlx generate --prompt` prints, on qwen3-tiny with a hand-made byte-level tokenizer
// (tiny_tokenizer.h, whose decoding the test does by hand): --stop cuts the text before the
// first stop string whether it streams or not, and on a terminal the text arrives token by
// token, the same text a pipe gets at the end.
#include "cli_fixture.h"
#include "tiny_tokenizer.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;
using GenerateTextCliTest = CliTest;

std::vector<int64_t> json_ids(const json::Value& doc) {
  std::vector<int64_t> out;
  if (const json::Value* tokens = doc.find("tokens"); tokens && tokens->as_array())
    for (const json::Value& t : *tokens->as_array()) out.push_back(*t.as_number()->as_i64());
  return out;
}

class GenerateText : public GenerateTextCliTest {
 protected:
  std::vector<std::string> args(std::vector<std::string> more) {
    std::vector<std::string> a = {
        "generate",    test::tiny_text_model(kFixtures, dir_ / "model").string(),
        "--prompt",    "Once upon a time",
        "-n",          "23",
        "--ignore-eos"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
};

TEST_F(GenerateText, TextIsTheTokensDecodedAndStopStringsCutIt) {
  ProcessResult full = rlx(args({"--json"}));
  ASSERT_EQ(full.exit_code, 0) << dump(full);
  json::Value doc = parse_json(full);
  const std::vector<int64_t> ids = json_ids(doc);
  // 23: the 24th greedy token is a lone byte 0x8C, which the text shows as U+FFFD.
  ASSERT_EQ(ids.size(), 23u) << dump(full);
  const std::string text = test::decode_by_hand(ids);
  EXPECT_EQ(str(doc.find("text")), text);
  EXPECT_EQ(str(doc.find("finish_reason")), "length");

  // A stop string that starts inside the text of the ninth token and ends in the tenth: the
  // text before it is printed, and generation ends with the tenth token.
  const std::string head = test::decode_by_hand({ids.begin(), ids.begin() + 8});
  const std::string ten = test::decode_by_hand({ids.begin(), ids.begin() + 10});
  ASSERT_GT(ten.size(), head.size() + 1);
  const std::string stop = ten.substr(head.size() + 1);
  const std::string before = text.substr(0, text.find(stop));
  ProcessResult cut = rlx(args({"--stop", "never printed", "--stop", stop, "--json"}));
  ASSERT_EQ(cut.exit_code, 0) << dump(cut);
  json::Value cut_doc = parse_json(cut);
  EXPECT_EQ(str(cut_doc.find("text")), before) << dump(cut);
  EXPECT_EQ(str(cut_doc.find("finish_reason")), "stop_string");
  EXPECT_EQ(str(cut_doc.find("stop_string")), stop);
  const std::vector<int64_t> cut_ids = json_ids(cut_doc);
  EXPECT_LE(cut_ids.size(), 10u);
  EXPECT_EQ(cut_ids, std::vector<int64_t>(ids.begin(), ids.begin() + cut_ids.size()));

  ProcessResult streamed = rlx(args({"--stop", stop, "--stream"}));
  ASSERT_EQ(streamed.exit_code, 0) << dump(streamed);
  EXPECT_EQ(streamed.out, before + "\n");
}

TEST_F(GenerateText, StopNeedsTextAndMayNotBeEmpty) {
  ProcessResult ids = rlx({"generate", "m", "-p", "1,2", "--stop", "x"});
  EXPECT_EQ(ids.exit_code, 1) << dump(ids);
  EXPECT_THAT(ids.err, HasSubstr("--stop looks for text")) << dump(ids);
  ProcessResult empty = rlx({"generate", "m", "--prompt", "hi", "--stop", ""});
  EXPECT_EQ(empty.exit_code, 1) << dump(empty);
  EXPECT_THAT(empty.err, HasSubstr("--stop is empty")) << dump(empty);
}

// On a terminal each token is flushed as it comes: the first token's text arrives before the
// decode graph is even compiled, so the reads are several, and together they are the text a
// pipe gets all at once.
TEST_F(GenerateText, ATerminalGetsTheTextTokenByTokenAndAPipeTheSameText) {
  ProcessResult piped = rlx(args({}));
  ASSERT_EQ(piped.exit_code, 0) << dump(piped);
  // A cold kernel cache of its own: with the piped run's kernels cached the decode graph would
  // compile in no time, and one read could then catch the whole text however it was flushed.
  test::TerminalResult tty = test::run_in_terminal(
      RLX_BINARY, args({}), rlx_environment({{"RLX_CACHE_DIR", (dir_ / "tty-cache").string()}}));
  ASSERT_EQ(tty.exit_code, 0) << tty.piped;
  const std::string joined = tty.terminal();
  EXPECT_EQ(joined, piped.out);
  // Unflushed, the text would be one write at exit; the decode graph's compile after the first
  // token keeps the first token's text apart from the rest at least.
  EXPECT_GE(tty.reads.size(), 2u) << joined;
  // In order: every read is the next stretch of the piped text.
  size_t at = 0;
  for (const std::string& r : tty.reads) {
    EXPECT_EQ(piped.out.compare(at, r.size(), r), 0) << "read at " << at << ": " << r;
    at += r.size();
  }
}

}  // namespace
}  // namespace rlx::cli
