// What a first-hour user meets before reading any help: the cpu target when none is named,
// "did you mean" for a slipped command or target, a target that is rlx's but not installed
// named as a missing package, errors as JSON under --json, and `rlx embed --text` printing
// something a person can judge.
#include <algorithm>
#include <cmath>

#include "cli_fixture.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;

using ::testing::Not;
class FirstHourCliTest : public CliTest {
 protected:
  // Every rlx target is built in this tree, so a machine without one is staged: a copy of the
  // binary whose prefix holds every plugin of the build but ane's.
  ProcessResult rlx_without_ane(std::vector<std::string> args) {
    const fs::path plugins = dir_ / "staged" / "share" / "rlx" / "plugins.d";
    fs::create_directories(plugins);
    fs::create_directories(dir_ / "staged" / "bin");
    const fs::path built =
        fs::path(RLX_BINARY).parent_path().parent_path() / "share" / "rlx" / "plugins.d";
    for (const auto& entry : fs::directory_iterator(built)) {
      const std::string name = entry.path().filename().string();
      if (name != "ane.toml" && name != "librlx_target_ane.so")
        fs::create_symlink(entry.path(), plugins / name);
    }
    const fs::path binary = dir_ / "staged" / "bin" / "rlx";
    fs::copy_file(RLX_BINARY, binary, fs::copy_options::overwrite_existing);
    return test::run_process(binary.string(), args, rlx_environment({}));
  }
};

TEST_F(FirstHourCliTest, TheTargetIsCpuWhenNoneIsNamed) {
  const fs::path x = write("x.json", R"({"x": [[1, 2, 3], [4, 5, 6]], "w": [[1, 1, 1], [0, 0, 0]]})");
  ProcessResult r = rlx({"run", small_model().string(), "--inputs", x.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  // y = (x + w) * x
  json::Value doc = parse_json(r);
  const json::Value* y = find_named(*doc.find("outputs"), "y");
  ASSERT_NE(y, nullptr) << dump(r);
  const json::Value* values = y->find("values");
  ASSERT_NE(values, nullptr) << dump(r);
  std::vector<double> got;
  for (const json::Value& row : *values->as_array())
    for (const json::Value& v : *row.as_array()) got.push_back(v.as_number()->value);
  EXPECT_EQ(got, (std::vector<double>{2, 6, 12, 16, 25, 36})) << dump(r);
  ProcessResult help = rlx({"run", "--help"});
  EXPECT_THAT(help.out, HasSubstr("(default cpu")) << dump(help);
}

TEST_F(FirstHourCliTest, ASlippedCommandGetsTheCommandItMeant) {
  ProcessResult r = rlx({"rnu", small_model().string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'rnu'")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("did you mean `rlx run`?")) << dump(r);
  ProcessResult far = rlx({"xyzzy"});
  EXPECT_EQ(far.exit_code, 1) << dump(far);
  EXPECT_THAT(far.err, Not(HasSubstr("did you mean"))) << dump(far);
}

TEST_F(FirstHourCliTest, ASlippedTargetGetsTheTargetItMeant) {
  ProcessResult r = rlx({"explain", small_model().string(), "--target", "cpuu"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  // The list is alphabetical, so cpu need not come first (cortexm sorts before it).
  EXPECT_THAT(r.err, HasSubstr("unknown target 'cpuu'; available targets: ")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr(" cpu,")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'cpu'?")) << dump(r);
}

TEST_F(FirstHourCliTest, AnRlxTargetThatIsNotInstalledIsNamedAsAMissingPackage) {
  ProcessResult r = rlx_without_ane({"explain", small_model().string(), "--target", "ane"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("target 'ane' is not installed here")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx-target-ane")) << dump(r);
}

TEST_F(FirstHourCliTest, UnderJsonAnErrorIsOneJsonLineOnStderr) {
  ProcessResult r =
      rlx_without_ane({"explain", small_model().string(), "--target", "ane", "--json"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_EQ(r.out, "") << dump(r);
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << dump(r);
  json::Value doc = json::parse(r.err);
  const json::Value* e = doc.find("error");
  ASSERT_NE(e, nullptr) << dump(r);
  EXPECT_EQ(str(e->find("kind")), "user");
  EXPECT_THAT(str(e->find("message")), HasSubstr("target 'ane' is not installed here"));

  // A graph that no target can compile names its node.
  const fs::path bad = write("bad.rlx",
                             "graph @bad(%x: f32[2,3]) {\n"
                             "  %y = NoSuchOp(%x) : f32[2,3]\n"
                             "  return %y\n"
                             "}\n");
  ProcessResult c = rlx({"explain", bad.string(), "--json"});
  EXPECT_EQ(c.exit_code, 1) << dump(c);
  json::Value cdoc = json::parse(c.err);
  ASSERT_NE(cdoc.find("error"), nullptr) << dump(c);
  EXPECT_NE(str(cdoc.find("error")->find("message")), "<missing>") << dump(c);

  // A usage error too.
  ProcessResult u = rlx({"explain", small_model().string(), "--no-such-flag", "--json"});
  EXPECT_EQ(u.exit_code, 1) << dump(u);
  json::Value udoc = json::parse(u.err);
  EXPECT_EQ(str(udoc.find("error")->find("kind")), "usage") << dump(u);
  EXPECT_THAT(str(udoc.find("error")->find("hint")), HasSubstr("rlx explain --help")) << dump(u);
}

// The cosine similarities embed prints agree with ones computed here from the embeddings it
// writes with --json.
TEST_F(FirstHourCliTest, EmbedTextWithoutOutputPrintsPairwiseSimilarities) {
  // The fixture's weights with a small WordPiece vocabulary of its own (ids far below its
  // vocabulary size), so --text has a tokenizer.
  const fs::path folder = dir_ / "minilm";
  fs::create_directories(folder);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(kFixtures / "minilm-l2-f16" / f, folder / f);
  std::ofstream(folder / "vocab.txt") << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\ncat\ndog\nsat\non\n"
                                         "the\nmat\nrug\nstock\nprices\nfell\n";
  const std::string model = folder.string();
  const std::vector<std::string> texts = {"a cat sat on the mat", "a dog sat on the rug",
                                          "stock prices fell"};
  std::vector<std::string> args = {"embed", model};
  for (const std::string& t : texts) args.insert(args.end(), {"--text", t});
  ProcessResult r = rlx(args);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, StartsWith("3 embeddings of 384 dimensions\ncosine similarity:\n")) << dump(r);

  args.push_back("--json");
  ProcessResult j = rlx(args);
  ASSERT_EQ(j.exit_code, 0) << dump(j);
  json::Value doc = parse_json(j);
  std::vector<std::vector<double>> e;
  for (const json::Value& row : *doc.find("sentence_embedding")->as_array()) {
    e.emplace_back();
    for (const json::Value& v : *row.as_array()) e.back().push_back(v.as_number()->value);
  }
  ASSERT_EQ(e.size(), 3u);
  auto cosine = [&](size_t a, size_t b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < e[a].size(); ++i)
      ab += e[a][i] * e[b][i], aa += e[a][i] * e[a][i], bb += e[b][i] * e[b][i];
    return ab / std::sqrt(aa * bb);
  };
  for (auto [a, b] : {std::pair<size_t, size_t>{0, 1}, {0, 2}, {1, 2}})
    EXPECT_THAT(r.out, HasSubstr(fmt::format("{:7.4f}  \"{}\" ~ \"{}\"", cosine(a, b), texts[a],
                                             texts[b])))
        << dump(r);
}

// Under --json a tensor prints one row per line: a row of numbers is never broken into one
// number per line (tiny-gpt's logits: 6 rows of 64).
TEST_F(FirstHourCliTest, JsonPrintsATensorOneRowPerLine) {
  const fs::path model = fs::path(RLX_MODELS_DIR) / "tiny-gpt";
  ProcessResult r = rlx({"run", (model / "model.rlx").string(), "-i",
                         (model / "inputs.safetensors").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  const size_t first = r.out.find("\"first\": [");
  ASSERT_NE(first, std::string::npos) << r.out;
  const std::string line = r.out.substr(first, r.out.find('\n', first) - first);
  EXPECT_EQ(std::count(line.begin(), line.end(), ','), 7) << line;  // the first 8 values
  EXPECT_EQ(line.back(), ']') << line;
}

}  // namespace
}  // namespace rlx::cli
