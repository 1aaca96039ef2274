// `rlx embed` and `rlx generate` run as a user runs them, on the fixture models, checked against
// the same float64 references as the parity tests.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "hf_folder.h"
#include "model_support.h"
#include "process.h"
#include "rlx/core/json.h"

namespace rlx::test {
namespace {

namespace fs = std::filesystem;
using cli::test::ProcessResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string dump(const ProcessResult& r) {
  return fmt::format("exit {}\n--- stdout\n{}--- stderr\n{}", r.exit_code, r.out, r.err);
}

class CliModels : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           fmt::format("rlx-cli-models-{}-{}", info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // Only the build tree's plugins, as in tests/cli.
  ProcessResult rlx(std::vector<std::string> args) {
    return cli::test::run_process(RLX_BINARY, args,
                                  {{"XDG_DATA_HOME", (dir_ / "none").string()},
                                   {"XDG_DATA_DIRS", (dir_ / "none").string()},
                                   {"RLX_PLUGIN_PATH", std::nullopt},
                                   {"RLX_DISABLE_PLUGINS", std::nullopt}});
  }
  fs::path dir_;
};

std::vector<int64_t> row_of(const Tensor& t, int64_t r) {
  int64_t w = t.shape()[1];
  return {t.as<int64_t>() + r * w, t.as<int64_t>() + (r + 1) * w};
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<int64_t> json_tokens(const ProcessResult& r) {
  std::vector<int64_t> out;
  json::Value v = json::parse(r.out);
  const json::Value* tokens = v.find("tokens");
  if (!tokens || !tokens->as_array()) {
    ADD_FAILURE() << "no tokens array\n" << dump(r);
    return out;
  }
  for (const json::Value& t : *tokens->as_array()) out.push_back(*t.as_number()->as_i64());
  return out;
}

TEST_F(CliModels, EmbedMatchesTheFloat64Reference) {
  RLX_FIXTURE(model, "minilm-l2-f16");
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  write_safetensors(in, {{"input_ids", ref.at("input_ids")},
                         {"attention_mask", ref.at("attention_mask")},
                         {"token_type_ids", ref.at("token_type_ids")}});
  ProcessResult r = rlx({"embed", model.string(), "--target", "cpu", "--inputs", in.string(),
                         "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  TensorMap got = read_safetensors(out);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_LE(max_abs_diff(got.at("last_hidden_state"), ref.at("last_hidden_state_f64")), 2e-3);
  const Tensor& emb = got.at("sentence_embedding");
  for (int64_t i = 0; i < emb.shape()[0]; ++i)
    EXPECT_GE(cosine(emb, ref.at("sentence_embedding_f64"), i, emb.shape()[1]), 0.9999);
}

TEST_F(CliModels, EmbedJsonPrintsOneRowPerSentence) {
  RLX_FIXTURE(model, "minilm-l2-f16");
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  fs::path in = dir_ / "in.safetensors";
  write_safetensors(
      in, {{"input_ids", ref.at("input_ids")}, {"attention_mask", ref.at("attention_mask")}});
  ProcessResult r =
      rlx({"embed", model.string(), "--target", "cpu", "--inputs", in.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value v = json::parse(r.out);
  const json::Array* rows = v.find("sentence_embedding")->as_array();
  ASSERT_NE(rows, nullptr) << dump(r);
  EXPECT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].as_array()->size(), 384u);
  EXPECT_TRUE(v.find("output")->is_null());
}

TEST_F(CliModels, GenerateJsonGivesTheReferenceGreedyTokens) {
  for (const char* name : {"qwen3-tiny", "llama-tiny"}) {
    RLX_FIXTURE(model, name);
    TensorMap ref = read_safetensors(model / "reference.safetensors");
    const Tensor& expected = ref.at("greedy_tokens");
    ProcessResult r = rlx({"generate", model.string(), "--target", "cpu", "--prompt-ids",
                           join(row_of(ref.at("prompts"), 0)), "--max-new-tokens",
                           std::to_string(expected.shape()[1]), "--ignore-eos", "--json"});
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    EXPECT_EQ(json_tokens(r), row_of(expected, 0)) << name;
  }
}

// With an eos id in generation_config.json, generation stops right after producing it.
TEST_F(CliModels, GenerateStopsAtEndOfSequence) {
  RLX_FIXTURE(fixture, "qwen3-tiny");
  TensorMap ref = read_safetensors(fixture / "reference.safetensors");
  std::vector<int64_t> greedy = row_of(ref.at("greedy_tokens"), 0);
  fs::path model = dir_ / "qwen3-eos";
  fs::create_directories(model);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(fixture / f, model / f);
  std::ofstream(model / "generation_config.json")
      << fmt::format("{{\"eos_token_id\": [{}, 99999]}}\n", greedy[2]);
  std::vector<std::string> args = {"generate",
                                   model.string(),
                                   "--target",
                                   "cpu",
                                   "--prompt-ids",
                                   join(row_of(ref.at("prompts"), 0)),
                                   "--max-new-tokens",
                                   "10",
                                   "--json"};
  ProcessResult r = rlx(args);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r), std::vector<int64_t>(greedy.begin(), greedy.begin() + 3));
  args.push_back("--ignore-eos");
  r = rlx(args);
  EXPECT_EQ(json_tokens(r), std::vector<int64_t>(greedy.begin(), greedy.begin() + 10));
}

TEST_F(CliModels, PlainOutputIsTheIdsOnOneLine) {
  RLX_FIXTURE(model, "llama-tiny");
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  std::vector<int64_t> g = row_of(ref.at("greedy_tokens"), 1);
  ProcessResult r = rlx({"generate", model.string(), "-t", "cpu", "-p",
                         join(row_of(ref.at("prompts"), 1)), "-n", "3", "--ignore-eos"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(r.out, fmt::format("{} {} {}\n", g[0], g[1], g[2]));
}

TEST_F(CliModels, CommandsHaveHelp) {
  for (const std::string c : {"embed", "generate"}) {
    ProcessResult r = rlx({c, "--help"});
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    EXPECT_THAT(r.out, StartsWith("usage: rlx " + c)) << dump(r);
  }
  ProcessResult r = rlx({"--help"});
  EXPECT_THAT(r.out, HasSubstr("embed")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("generate")) << dump(r);
}

TEST_F(CliModels, WrongKindOfModelIsAUserError) {
  RLX_FIXTURE(bert, "minilm-l2-f16");
  RLX_FIXTURE(qwen, "qwen3-tiny");
  ProcessResult r = rlx({"generate", bert.string(), "--target", "cpu", "--prompt-ids", "1,2"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("generation needs a decoder model")) << dump(r);
  r = rlx({"embed", qwen.string(), "--target", "cpu", "--json", "--inputs", "x.safetensors"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx embed needs an encoder")) << dump(r);
  r = rlx({"generate", qwen.string(), "--target", "cpu", "--prompt-ids", "1,2,abc"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--prompt-ids: 'abc' is not a token id")) << dump(r);
  r = rlx({"generate", qwen.string(), "--target", "cpu", "--prompt", "hello"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--prompt needs a tokenizer, and the qwen3 model has none"))
      << dump(r);
}

TEST_F(CliModels, RunOnADecoderFolderGivesLogits) {
  RLX_FIXTURE(model, "qwen3-tiny");
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  write_safetensors(in, {{"input_ids", ref.at("prompts")}});
  ProcessResult r = rlx({"run", model.string(), "--target", "cpu", "--inputs", in.string(),
                         "--output", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_LE(max_abs_diff(read_safetensors(out).at("logits"), ref.at("prompt_logits_f64")), 1e-3);
}

// Text in: --text tokenizes with the folder's vocab.txt; padding a short sentence next to a
// longer one does not change its embedding.
TEST_F(CliModels, EmbedTextUsesTheModelsTokenizer) {
  TinyBert cfg;
  fs::path model = dir_ / "bert";
  fs::create_directories(model);
  write_text(model / "config.json", cfg.config_json());
  write_safetensors(model / "model.safetensors", cfg.weights());
  write_text(model / "vocab.txt", bert_vocab_txt());
  auto embed = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"embed", model.string(), "--target", "cpu", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    std::vector<std::vector<double>> rows;
    json::Value v = json::parse(r.out);
    for (const json::Value& row : *v.find("sentence_embedding")->as_array()) {
      rows.emplace_back();
      for (const json::Value& x : *row.as_array()) rows.back().push_back(x.as_number()->value);
    }
    return rows;
  };
  auto alone = embed({"--text", "hello"});
  write_text(dir_ / "lines.txt", "hello\nHello worlds . hello\n");
  auto batch = embed({"--text-file", (dir_ / "lines.txt").string()});
  ASSERT_EQ(alone.size(), 1u);
  ASSERT_EQ(batch.size(), 2u);
  for (size_t i = 0; i < alone[0].size(); ++i) EXPECT_NEAR(alone[0][i], batch[0][i], 1e-6);
  ProcessResult r = rlx({"embed", model.string(), "--target", "cpu", "--json"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("give either --inputs IN.safetensors or --text/--text-file"));
}

TEST_F(CliModels, GeneratePromptPrintsText) {
  TinyDecoder d;
  d.vocab = 300;
  fs::path model = dir_ / "decoder";
  fs::create_directories(model);
  write_text(model / "config.json", d.config_json());
  write_safetensors(model / "model.safetensors", d.weights());
  write_text(model / "tokenizer.json", byte_level_tokenizer_json("\\\\p{N}"));
  ProcessResult r = rlx({"generate", model.string(), "--target", "cpu", "--prompt", "hi hi", "-n",
                         "4", "--ignore-eos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value v = json::parse(r.out);
  EXPECT_EQ(v.find("tokens")->as_array()->size(), 4u);
  ASSERT_NE(v.find("text"), nullptr) << dump(r);
  ProcessResult plain = rlx({"generate", model.string(), "--target", "cpu", "--prompt", "hi hi",
                             "-n", "4", "--ignore-eos"});
  EXPECT_EQ(plain.out, *v.find("text")->as_string() + "\n");
}

}  // namespace
}  // namespace rlx::test
