// `rlx embed` and `rlx generate` run as a user runs them, on the fixture models, checked against
// the same float64 references as the parity tests.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>

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
  double err = max_abs_diff(got.at("last_hidden_state"), ref.at("last_hidden_state_f64"));
  const Tensor& emb = got.at("sentence_embedding");
  double worst = 1;
  for (int64_t i = 0; i < emb.shape()[0]; ++i)
    worst = std::min(worst, cosine(emb, ref.at("sentence_embedding_f64"), i, emb.shape()[1]));
  // The same numbers as MiniLmParity (measured on cpu, 2026-12: hidden 2.4e-6, 1 - cosine
  // 6.4e-15), so the same bounds, about 10x.
  std::printf("rlx embed minilm-l2-f16: hidden max abs error %.3g, 1 - min cosine %.3g\n", err,
              1 - worst);
  EXPECT_LE(err, 3e-5);
  EXPECT_LE(1 - worst, 1e-13);
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

// --kv-cache f16 keeps the decode graph's cache in f16: the reference tokens still, from half
// the bytes, and the choice is reported (-v and --json).
TEST_F(CliModels, GenerateWithF16KvCacheGivesTheReferenceTokensAndSaysSo) {
  for (const char* name : {"qwen3-tiny", "llama-tiny"}) {
    RLX_FIXTURE(model, name);
    TensorMap ref = read_safetensors(model / "reference.safetensors");
    const Tensor& expected = ref.at("greedy_tokens");
    std::vector<std::string> args = {"generate",         model.string(),
                                     "--target",         "cpu",
                                     "--prompt-ids",     join(row_of(ref.at("prompts"), 0)),
                                     "--max-new-tokens", std::to_string(expected.shape()[1]),
                                     "--ignore-eos",     "--json"};
    ProcessResult f32 = rlx(args);
    args.insert(args.end(), {"--kv-cache", "f16", "-v"});
    ProcessResult r = rlx(args);
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    EXPECT_EQ(json_tokens(r), row_of(expected, 0)) << name;
    json::Value v = json::parse(r.out), v32 = json::parse(f32.out);
    const json::Value *cache = v.find("kv_cache"), *cache32 = v32.find("kv_cache");
    ASSERT_TRUE(cache && cache32) << dump(r) << dump(f32);
    EXPECT_EQ(*cache->find("dtype")->as_string(), "f16");
    EXPECT_EQ(*cache32->find("dtype")->as_string(), "f32");
    EXPECT_EQ(2 * *cache->find("bytes")->as_number()->as_i64(),
              *cache32->find("bytes")->as_number()->as_i64());
    EXPECT_THAT(r.err, HasSubstr("capacity 64), ")) << dump(r);
    EXPECT_THAT(r.err, HasSubstr("; KV cache f16 (")) << dump(r);
  }
}

// The option names its choices, and applies to a graph with a KV cache only: bench's main graph
// has none; its decode graph runs with an f16 cache and says so.
TEST_F(CliModels, KvCacheOptionIsCheckedAndReported) {
  RLX_FIXTURE(model, "qwen3-tiny");
  ProcessResult r = rlx({"generate", model.string(), "-t", "cpu", "-p", "1,2", "--kv-cache", "f8"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("'f8' is not a KV cache dtype: give f32 (the default), f16 or bf16"))
      << dump(r);
  const std::vector<std::string> bench = {"bench", model.string(), "-t", "cpu",      "-b",
                                          "1",     "--runs",       "1",  "--warmup", "1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = bench;
    args.insert(args.end(), more.begin(), more.end());
    return rlx(args);
  };
  r = with({"--seq", "4", "--kv-cache", "f16"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--kv-cache: the main graph of " + model.string() +
                               " has no KV cache (no past_* inputs)"))
      << dump(r);
  EXPECT_THAT(r.err, HasSubstr("graphs of this model with one: decode")) << dump(r);
  r = with({"--graph", "decode", "--bind", "T=64", "--kv-cache", "f16", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value v = json::parse(r.out);
  EXPECT_EQ(*v.find("kv_cache")->as_string(), "f16");
  EXPECT_EQ(*v.find("inputs")->find("past_key.0")->as_string(), "f16[1,2,64,32]");
  r = with({"--graph", "decode", "--bind", "T=64", "--kv-cache", "bf16"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("KV cache          bf16")) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("past_key.0 bf16[1,2,64,32]")) << dump(r);
  // A compiled decode folder keeps the cache it was compiled with: bench runs it in f16.
  const std::string folder = (dir_ / "decode-f16").string();
  r = rlx({"compile", model.string(), "-t", "cpu", "--graph", "decode", "--bind", "T=64", "--bind",
           "B=1", "--kv-cache", "f16", "-o", folder});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  r = rlx({"bench", folder, "--runs", "1", "--warmup", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  v = json::parse(r.out);
  EXPECT_EQ(*v.find("inputs")->find("past_key.0")->as_string(), "f16[1,2,64,32]");
  r = rlx({"compile", model.string(), "-t", "cpu", "--kv-cache", "f16", "-o", folder});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("has no KV cache")) << dump(r);
}

// --q8-activations changes quantized products only: on a float checkpoint it would do nothing,
// so it is refused instead of being silently ignored.
TEST_F(CliModels, Q8ActivationsOnAFloatModelIsRefused) {
  RLX_FIXTURE(model, "qwen3-tiny");
  for (const char* command : {"generate", "bench"}) {
    std::vector<std::string> args = {command, model.string(), "--target", "cpu",
                                     "--q8-activations"};
    if (std::string(command) == "generate")
      args.insert(args.end(), {"--prompt-ids", "1,2"});
    else
      args.insert(args.end(), {"--seq", "4", "--runs", "1", "--warmup", "1"});
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_NE(r.err.find("--q8-activations: " + model.string() +
                         " has no products with block-quantized weights"),
              std::string::npos)
        << dump(r);
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
  EXPECT_THAT(r.err, HasSubstr("no sentence_embedding output: embedding needs an encoder (bert)"))
      << dump(r);
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
  double err = max_abs_diff(read_safetensors(out).at("logits"), ref.at("prompt_logits_f64"));
  // Measured 4.2e-6 on cpu (2026-12), as DecoderParity; the bound is about 10x.
  std::printf("rlx run qwen3-tiny: logits max abs error %.3g\n", err);
  EXPECT_LE(err, 5e-5);
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
  double diff = 0;
  for (size_t i = 0; i < alone[0].size(); ++i)
    diff = std::max(diff, std::fabs(alone[0][i] - batch[0][i]));
  std::printf("rlx embed: padded vs alone max abs difference %.3g\n", diff);
  EXPECT_LE(diff, 1e-6);
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
  // Streamed token by token (each piece whole UTF-8 characters), the same text.
  ProcessResult streamed = rlx({"generate", model.string(), "--target", "cpu", "--prompt", "hi hi",
                                "-n", "4", "--ignore-eos", "--stream"});
  EXPECT_EQ(streamed.out, plain.out) << dump(streamed);
}

// Hostile inputs (issue 24): an id outside the vocabulary, a mask that is not 0/1, a token type
// past type_vocab_size or more positions than the model embeds is the user's error, named with
// the input, the value, where it is and the range (minilm-l2-f16: vocab 1000, 2 token types, 128
// positions), before any kernel runs.
TEST_F(CliModels, EmbedRejectsInputsOutsideTheModelsRanges) {
  RLX_FIXTURE(model, "minilm-l2-f16");
  auto ids = [](std::vector<int64_t> v) {
    return Tensor::from<int64_t>(DType::kI64, {1, static_cast<int64_t>(v.size())}, v);
  };
  struct Case {
    TensorMap inputs;
    std::string message;
  };
  std::vector<Case> cases = {
      {{{"input_ids", ids({101, 7, -1})}},
       "input 'input_ids' holds -1 at [0, 2], outside what the model takes: 0 to 999 "
       "(vocab_size 1000)"},
      {{{"input_ids", ids({101, 7, 1000})}},
       "input 'input_ids' holds 1000 at [0, 2], outside what the model takes: 0 to 999 "
       "(vocab_size 1000)"},
      {{{"input_ids", ids({101, 7, 9})}, {"attention_mask", ids({1, 5, 1})}},
       "input 'attention_mask' holds 5 at [0, 1], outside what the model takes: 0 to 1"},
      {{{"input_ids", ids({101, 7, 9})}, {"attention_mask", ids({1, 1, -1})}},
       "input 'attention_mask' holds -1 at [0, 2], outside what the model takes: 0 to 1"},
      {{{"input_ids", ids({101, 7, 9})}, {"token_type_ids", ids({0, 2, 0})}},
       "input 'token_type_ids' holds 2 at [0, 1], outside what the model takes: 0 to 1 "
       "(type_vocab_size 2)"},
      {{{"input_ids", ids(std::vector<int64_t>(129, 7))}},
       "input 'input_ids' [1,129] has size 129 in dim 1, outside what the model takes: 0 to 128 "
       "(max_position_embeddings 128)"},
  };
  for (const Case& c : cases) {
    fs::path in = dir_ / "in.safetensors";
    write_safetensors(in, c.inputs);
    ProcessResult r =
        rlx({"embed", model.string(), "--target", "cpu", "--inputs", in.string(), "--json"});
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_THAT(r.err, HasSubstr(c.message)) << dump(r);
    EXPECT_THAT(r.err, ::testing::Not(HasSubstr("plugin"))) << dump(r);
    EXPECT_EQ(r.out, "") << dump(r);
  }
}

// The same rule for `rlx run` and `rlx generate` on a decoder (qwen3-tiny: vocab 2048, 512
// positions).
TEST_F(CliModels, RunAndGenerateRejectIdsOutsideTheVocabulary) {
  RLX_FIXTURE(model, "qwen3-tiny");
  fs::path in = dir_ / "in.safetensors", out = dir_ / "out.safetensors";
  write_safetensors(in, {{"input_ids", Tensor::from<int64_t>(DType::kI64, {1, 2}, {2048, 1})}});
  ProcessResult r = rlx({"run", model.string(), "--target", "cpu", "--inputs", in.string(),
                         "--output", out.string()});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("input 'input_ids' holds 2048 at [0, 0], outside what the model "
                               "takes: 0 to 2047 (vocab_size 2048)"))
      << dump(r);
  EXPECT_FALSE(fs::exists(out));
  r = rlx({"generate", model.string(), "--target", "cpu", "--prompt-ids", "1,2048", "-n", "2"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("input 'input_ids' holds 2048 at [0, 1], outside what the model "
                               "takes: 0 to 2047 (vocab_size 2048)"))
      << dump(r);
}

// A length the KV cache cannot hold is the user's error naming the flag and the limit, not an
// int64 overflow or "out of memory".
TEST_F(CliModels, GenerateLengthBeyondTheContextNamesTheLimit) {
  RLX_FIXTURE(model, "qwen3-tiny");
  for (const char* n : {"9223372036854775807", "100000000", "511"}) {
    ProcessResult r = rlx({"generate", model.string(), "--target", "cpu", "--prompt-ids", "1,2",
                           "-n", n, "--ignore-eos"});
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_THAT(r.err, HasSubstr(fmt::format("-n/--max-new-tokens {}: the prompt's 2 tokens and "
                                             "{} new ones exceed the model's context of 512 "
                                             "positions",
                                             n, n)))
        << dump(r);
    EXPECT_THAT(r.err, HasSubstr("hint: give -n 510 or less")) << dump(r);
  }
  // Exactly the context is allowed: 2 + 510 = 512 positions.
  ProcessResult r = rlx({"generate", model.string(), "--target", "cpu", "--prompt-ids", "1,2", "-n",
                         "510", "--ignore-eos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r).size(), 510u);
}

// A config that describes less than the checkpoint holds (issue 24): one layer of two would run
// silently.
TEST_F(CliModels, ConfigWithFewerLayersThanTheCheckpointIsAUserError) {
  RLX_FIXTURE(fixture, "qwen3-tiny");
  fs::path model = dir_ / "qwen3-one-layer";
  fs::create_directories(model);
  fs::copy_file(fixture / "model.safetensors", model / "model.safetensors");
  std::ifstream f(fixture / "config.json");
  std::string config((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  config = std::regex_replace(config, std::regex(R"("num_hidden_layers": 2)"),
                              R"("num_hidden_layers": 1)");
  config = std::regex_replace(config, std::regex(R"("full_attention",\s*"full_attention")"),
                              R"("full_attention")");
  std::ofstream(model / "config.json") << config;
  ProcessResult r = rlx({"generate", model.string(), "--target", "cpu", "--prompt-ids", "1,2"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("the checkpoint has layer 1 but num_hidden_layers is 1")) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("model.layers.1.")) << dump(r);
}

}  // namespace
}  // namespace rlx::test
