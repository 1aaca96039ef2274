// `rlx generate` as it streams and samples, on the tiny decoder fixtures (tests/data/fixtures,
// random weights, ids only: no tokenizer): the streamed ids are the --json ones, --temperature 0
// is greedy, a seed repeats its tokens, sampling flags out of range name the flag, and the
// tokens/s line goes to stderr unless --json carries the rates.
#include <sstream>

#include <cmath>
#include <cstdlib>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;

using ::testing::ContainsRegex;
using ::testing::Not;

class GenerateCliTest : public CliTest {
 protected:
  // `rlx run MODEL` (a fixture) on ids [4, 3] with the ranks `split` asks for: its logits.
  std::vector<float> run_logits(const std::string& model, const std::vector<std::string>& split,
                                const std::string& file) {
    std::vector<std::string> args = {"run",          (kFixtures / model).string(),
                                     "-o",           (dir_ / file).string(),
                                     "--input",      "input_ids=5,9,2,7,1,3,8,4,6,11,12,10",
                                     "--input-shape", "input_ids=4x3",
                                     "--collective-timeout", "60"};
    args.insert(args.end(), split.begin(), split.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    if (r.exit_code != 0) return {};
    const Tensor t = read_safetensors(dir_ / file).at("logits");
    return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
  }

  // minilm-l2-f16's sentences run by `rlx run` with the ranks `split` asks for: their embeddings
  // must equal transformers' float64 ones as one process's do (cosine >= 0.99999).
  void expect_reference_embeddings(const std::vector<std::string>& split) {
    const fs::path dir = kFixtures / "minilm-l2-f16";
    TensorMap ref = read_safetensors(dir / "reference.safetensors");
    const fs::path inputs = dir_ / "inputs.safetensors";
    write_safetensors(inputs, {{"input_ids", ref.at("input_ids")},
                               {"attention_mask", ref.at("attention_mask")},
                               {"token_type_ids", ref.at("token_type_ids")}});
    const fs::path out = dir_ / "out.safetensors";
    std::vector<std::string> args = {"run", dir.string(), "--inputs", inputs.string(), "-o",
                                     out.string(), "--collective-timeout", "60"};
    args.insert(args.end(), split.begin(), split.end());
    ProcessResult r = rlx(args);
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    const Tensor got = read_safetensors(out).at("sentence_embedding");
    const Tensor& want = ref.at("sentence_embedding_f64");
    const int64_t rows = got.shape()[0], width = got.shape()[1];
    for (int64_t i = 0; i < rows; ++i) {
      double dot = 0, a = 0, b = 0;
      for (int64_t j = 0; j < width; ++j) {
        const double x = got.as<float>()[i * width + j], y = want.as<double>()[i * width + j];
        dot += x * y, a += x * x, b += y * y;
      }
      EXPECT_GE(dot / std::sqrt(a * b), 0.99999) << "sentence " << i;
    }
  }
};

std::vector<int64_t> json_tokens(const ProcessResult& r) {
  std::vector<int64_t> out;
  json::Value doc = parse_json(r);
  const json::Value* tokens = doc.find("tokens");
  if (!tokens || !tokens->as_array()) {
    ADD_FAILURE() << "no tokens array\n" << dump(r);
    return out;
  }
  for (const json::Value& t : *tokens->as_array()) out.push_back(*t.as_number()->as_i64());
  return out;
}

std::vector<int64_t> printed_tokens(const ProcessResult& r) {
  std::vector<int64_t> out;
  std::istringstream in(r.out);
  for (int64_t id = 0; in >> id;) out.push_back(id);
  return out;
}

// The first prompt of a fixture's reference and its greedy continuation (transformers, float64).
struct Reference {
  std::string prompt;
  std::vector<int64_t> greedy;
};

Reference reference(const fs::path& model) {
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  const Tensor &prompts = ref.at("prompts"), &greedy = ref.at("greedy_tokens");
  Reference r;
  for (int64_t i = 0; i < prompts.shape()[1]; ++i)
    r.prompt += (i ? "," : "") + std::to_string(prompts.as<int64_t>()[i]);
  r.greedy.assign(greedy.as<int64_t>(), greedy.as<int64_t>() + greedy.shape()[1]);
  return r;
}

class Generate {
 public:
  explicit Generate(const fs::path& model) : model_(model), ref_(reference(model)) {}
  std::vector<std::string> args(std::vector<std::string> more) const {
    std::vector<std::string> a = {"generate",     model_.string(),
                                  "--prompt-ids", ref_.prompt,
                                  "-n",           std::to_string(ref_.greedy.size()),
                                  "--ignore-eos"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  const Reference& ref() const { return ref_; }

 private:
  fs::path model_;
  Reference ref_;
};

TEST_F(GenerateCliTest, StreamedIdsAreTheJsonTokensInOrder) {
  for (const char* name : {"qwen3-tiny", "llama-tiny"}) {
    Generate g(kFixtures / name);
    ProcessResult streamed = rlx(g.args({"--stream"}));
    ASSERT_EQ(streamed.exit_code, 0) << dump(streamed);
    ProcessResult json = rlx(g.args({"--json"}));
    ASSERT_EQ(json.exit_code, 0) << dump(json);
    EXPECT_EQ(printed_tokens(streamed), json_tokens(json)) << name;
    EXPECT_EQ(json_tokens(json), g.ref().greedy) << name;
    EXPECT_THAT(streamed.out, ContainsRegex("^[0-9]+( [0-9]+)*\n$")) << dump(streamed);
  }
}

// Tensor parallelism: two ranks, each with half of qwen3-tiny's heads (2 of 4 query, 1 of 2
// key/value) and MLP columns, adding their partial products with AllReduce, continue the prompt
// exactly as transformers does in float64 (and as one process does).
TEST_F(GenerateCliTest, TwoTensorParallelRanksGiveTheReferenceTokens) {
  Generate g(kFixtures / "qwen3-tiny");
  ProcessResult r = rlx(g.args({"--tp", "2", "--json", "--collective-timeout", "60"}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r), g.ref().greedy);
}

// The same under OpenMPI's launcher: each process reads its rank from mpirun and builds its shard.
TEST_F(GenerateCliTest, TensorParallelRanksUnderMpirunGiveTheReferenceTokens) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun here";
  Generate g(kFixtures / "qwen3-tiny");
  std::vector<std::string> args = {"--oversubscribe", "-n", "2", RLX_BINARY};
  for (const std::string& a : g.args({"--tp", "2", "--json", "--collective-timeout", "60"}))
    args.push_back(a);
  // Root may run mpirun in CI containers only when it says so.
  ProcessResult r = test::run_process("/usr/bin/mpirun", args,
                                      rlx_environment({{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                                       {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                                                       {"OMPI_MCA_plm_rsh_agent", ""}}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r), g.ref().greedy);  // rank 1's stdout is silenced: one document
}

// What cannot be split is refused before any rank computes, saying why.
TEST_F(GenerateCliTest, TensorParallelismRefusesWhatItCannotSplit) {
  // llama-tiny has 3 key/value heads.
  ProcessResult heads = rlx(Generate(kFixtures / "llama-tiny").args({"--tp", "2"}));
  EXPECT_NE(heads.exit_code, 0) << dump(heads);
  EXPECT_THAT(heads.err, HasSubstr("6 query and 3 key/value heads; both must divide by the number "
                                   "of ranks"))
      << dump(heads);
  ProcessResult ranks = rlx(Generate(kFixtures / "qwen3-tiny").args({"--tp", "2", "--nproc", "3"}));
  EXPECT_NE(ranks.exit_code, 0) << dump(ranks);
  EXPECT_THAT(ranks.err, HasSubstr("--tp 2 needs 2 ranks and the job has 3")) << dump(ranks);
  const fs::path ir = write("tiny.rlx",
                            "graph @g(%input_ids: i64[1,2]) {\n  return %input_ids\n}\n");
  ProcessResult text = rlx({"run", ir.string(), "--input", "input_ids=1,2", "--tp", "2"});
  EXPECT_NE(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.err, HasSubstr("cannot be split over ranks")) << dump(text);
}

// Pipeline parallelism: two stages of one layer each, the hidden state sent from rank 0 to rank 1
// and the logits broadcast back, continue the prompt exactly as transformers does in float64;
// llama-tiny (which --tp cannot split) too, and qwen3-tiny over four ranks with --tp 2 inside
// each stage.
TEST_F(GenerateCliTest, PipelineStagesGiveTheReferenceTokens) {
  for (const char* name : {"qwen3-tiny", "llama-tiny"}) {
    Generate g(kFixtures / name);
    ProcessResult r = rlx(g.args({"--pp", "2", "--json", "--collective-timeout", "60"}));
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    EXPECT_EQ(json_tokens(r), g.ref().greedy) << name;
  }
  Generate g(kFixtures / "qwen3-tiny");
  ProcessResult r = rlx(g.args({"--pp", "2", "--tp", "2", "--json", "--collective-timeout", "60"}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r), g.ref().greedy);
}

// What cannot be split into stages is refused before any rank computes, saying why.
TEST_F(GenerateCliTest, PipelineParallelismRefusesWhatItCannotSplit) {
  ProcessResult layers = rlx(Generate(kFixtures / "qwen3-tiny").args({"--pp", "3"}));
  EXPECT_NE(layers.exit_code, 0) << dump(layers);
  EXPECT_THAT(layers.err, HasSubstr("--pp 3: the model has 2 layers, fewer than the stages"))
      << dump(layers);
  ProcessResult ranks =
      rlx(Generate(kFixtures / "qwen3-tiny").args({"--pp", "2", "--tp", "2", "--nproc", "2"}));
  EXPECT_NE(ranks.exit_code, 0) << dump(ranks);
  EXPECT_THAT(ranks.err, HasSubstr("--tp 2 --pp 2 needs 4 ranks and the job has 2")) << dump(ranks);
  const fs::path ir = write("tiny.rlx",
                            "graph @g(%input_ids: i64[1,2]) {\n  return %input_ids\n}\n");
  ProcessResult text = rlx({"run", ir.string(), "--input", "input_ids=1,2", "--pp", "2"});
  EXPECT_NE(text.exit_code, 0) << dump(text);
  EXPECT_THAT(text.err, HasSubstr("cannot split models into pipeline stages")) << dump(text);
}

// bert under --tp 2: MiniLM's 12 heads and 1536 MLP columns split over two ranks (the biases
// after the split products added once).
TEST_F(GenerateCliTest, TwoTensorParallelRanksEmbedAsOneProcessDoes) {
  expect_reference_embeddings({"--tp", "2"});
}

// bert in two pipeline stages (embeddings and layer 0, then layer 1, whose hidden state is
// broadcast and pooled on every rank), and with --tp 2 inside each stage.
TEST_F(GenerateCliTest, PipelineStagesEmbedAsOneProcessDoes) {
  expect_reference_embeddings({"--pp", "2"});
  expect_reference_embeddings({"--pp", "2", "--tp", "2"});
  expect_reference_embeddings({"--pp", "2", "--micro-batches", "2"});
}

// --micro-batches M: the batch flows through the stages in M pieces, the last stage's results
// joined and broadcast once: the logits are one process's, bit for bit (the same kernels on the
// same rows), on every one of 4 micro-batches of one sequence and 2 of two.
TEST_F(GenerateCliTest, MicroBatchedStagesGiveOneProcessLogits) {
  const std::vector<float> one = run_logits("llama-tiny", {}, "one.safetensors");
  ASSERT_EQ(one.size(), size_t{4 * 3 * 1500});
  EXPECT_EQ(run_logits("llama-tiny", {"--pp", "2", "--micro-batches", "4"}, "four.safetensors"),
            one);
  EXPECT_EQ(run_logits("llama-tiny", {"--pp", "2", "--micro-batches", "2"}, "two.safetensors"),
            one);

  auto fails = [&](const std::vector<std::string>& extra, const std::string& why) {
    std::vector<std::string> a = {"run", (kFixtures / "llama-tiny").string(), "--input",
                                  "input_ids=5,9,2,7,1,3,8,4,6,11,12,10", "--input-shape",
                                  "input_ids=4x3"};
    a.insert(a.end(), extra.begin(), extra.end());
    ProcessResult r = rlx(a);
    EXPECT_NE(r.exit_code, 0) << dump(r);
    EXPECT_THAT(r.err, HasSubstr(why)) << dump(r);
  };
  fails({"--micro-batches", "2"}, "--micro-batches cuts the batch for the stages of --pp P");
  fails({"--pp", "2", "--micro-batches", "3"},
        "a batch of 4 does not split into 3 equal micro-batches");
}

// A job of more ranks than --tp x --pp holds copies of the split model, each on its own group of
// ranks and an equal share of the batch: the logits are one process's (bit for bit with stages;
// to float rounding with tensor-parallel sums), and what cannot be shared is refused.
TEST_F(GenerateCliTest, CopiesOfASplitModelShareTheBatch) {
  const std::vector<float> llama = run_logits("llama-tiny", {}, "llama.safetensors");
  EXPECT_EQ(run_logits("llama-tiny", {"--pp", "2", "--nproc", "4"}, "pp.safetensors"), llama);
  EXPECT_EQ(run_logits("llama-tiny", {"--pp", "2", "--nproc", "4", "--micro-batches", "2"},
                       "ppmb.safetensors"),
            llama);
  const std::vector<float> qwen = run_logits("qwen3-tiny", {}, "qwen.safetensors");
  const std::vector<float> tp =
      run_logits("qwen3-tiny", {"--tp", "2", "--nproc", "4"}, "tp.safetensors");
  ASSERT_EQ(tp.size(), qwen.size());
  for (size_t i = 0; i < tp.size(); ++i) ASSERT_NEAR(tp[i], qwen[i], 1e-4) << i;

  std::vector<std::string> odd = {"run", (kFixtures / "qwen3-tiny").string(), "--input",
                                  "input_ids=1,2,3", "--input-shape", "input_ids=3x1", "--tp",
                                  "2", "--nproc", "4"};
  ProcessResult share = rlx(odd);
  EXPECT_NE(share.exit_code, 0) << dump(share);
  EXPECT_THAT(share.err, HasSubstr("a batch of 3 does not split into 2 equal shares (2 copies "
                                   "of the model)"))
      << dump(share);
  ProcessResult generate =
      rlx(Generate(kFixtures / "qwen3-tiny").args({"--tp", "2", "--nproc", "4"}));
  EXPECT_NE(generate.exit_code, 0) << dump(generate);
  EXPECT_THAT(generate.err, HasSubstr("--tp 2 needs 2 ranks and the job has 4")) << dump(generate);
}

TEST_F(GenerateCliTest, TemperatureZeroIsGreedy) {
  Generate g(kFixtures / "qwen3-tiny");
  ProcessResult r = rlx(g.args({"--temperature", "0", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(json_tokens(r), g.ref().greedy);
  json::Value doc = parse_json(r);
  EXPECT_EQ(*doc.find("sampling")->find("method")->as_string(), "greedy") << dump(r);
}

// A high temperature flattens the distribution, so two seeds part early. Seeds 7 and 8 were
// checked to differ on qwen3-tiny (2026-12).
TEST_F(GenerateCliTest, TheSameSeedRepeatsItsTokensAndAnotherSeedDiffers) {
  Generate g(kFixtures / "qwen3-tiny");
  auto sampled = [&](const char* seed) {
    ProcessResult r = rlx(g.args(
        {"--temperature", "5", "--top-k", "50", "--top-p", "0.95", "--seed", seed, "--json"}));
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    return r;
  };
  ProcessResult first = sampled("7"), again = sampled("7"), other = sampled("8");
  EXPECT_EQ(json_tokens(first), json_tokens(again));
  EXPECT_NE(json_tokens(first), json_tokens(other));
  EXPECT_NE(json_tokens(first), g.ref().greedy);
  json::Value doc = parse_json(first);
  const json::Value* sampling = doc.find("sampling");
  ASSERT_NE(sampling, nullptr) << dump(first);
  EXPECT_EQ(*sampling->find("method")->as_string(), "sample");
  EXPECT_EQ(sampling->find("temperature")->as_number()->value, 5);
  EXPECT_EQ(*sampling->find("top_k")->as_number()->as_i64(), 50);
  EXPECT_EQ(sampling->find("top_p")->as_number()->value, 0.95);
  EXPECT_EQ(*sampling->find("seed")->as_number()->as_i64(), 7);
}

// Penalising what was seen changes a greedy continuation that repeats tokens.
TEST_F(GenerateCliTest, RepetitionPenaltyChangesTheGreedyTokens) {
  Generate g(kFixtures / "qwen3-tiny");
  ProcessResult r = rlx(g.args({"--repetition-penalty", "10", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_NE(json_tokens(r), g.ref().greedy);
  EXPECT_EQ(parse_json(r).find("sampling")->find("repetition_penalty")->as_number()->value, 10);
}

TEST_F(GenerateCliTest, SamplingValuesOutOfRangeAreUsageErrorsNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--temperature", "-1"}, "--temperature: '-1' is not a number >= 0"},
      {{"--temperature", "hot"}, "--temperature: 'hot' is not a number >= 0"},
      {{"--temperature", "1", "--top-p", "0"}, "--top-p: '0' is not a number in (0, 1]"},
      {{"--temperature", "1", "--top-p", "1.5"}, "--top-p: '1.5' is not a number in (0, 1]"},
      {{"--temperature", "1", "--top-k", "0"}, "--top-k: '0' is not an integer >= 1"},
      {{"--repetition-penalty", "0"}, "--repetition-penalty: '0' is not a number > 0"},
      {{"--temperature", "nan"}, "--temperature: 'nan' is not a number >= 0"},
      {{"--top-k", "5"}, "--top-k applies to sampling, and without --temperature"},
      {{"--temperature", "0", "--seed", "1"}, "--seed applies to sampling"},
  };
  for (const auto& [more, message] : cases) {
    std::vector<std::string> args = {"generate", "m", "-p", "1,2"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << message << "\n" << dump(r);
    EXPECT_THAT(r.err, StartsWith("rlx: error: " + message)) << dump(r);
    EXPECT_TRUE(r.out.empty()) << dump(r);
  }
  // Under --json the error is JSON too.
  ProcessResult r = rlx({"generate", "m", "-p", "1,2", "--stream", "--json"});
  EXPECT_EQ(r.exit_code, 1) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("\"kind\": \"usage\", \"message\": \"--stream prints tokens as "
                               "they come and --json one object at the end"))
      << dump(r);
}

TEST_F(GenerateCliTest, TokensPerSecondAreOnStderrOrInTheJson) {
  Generate g(kFixtures / "llama-tiny");
  ProcessResult plain = rlx(g.args({}));
  ASSERT_EQ(plain.exit_code, 0) << dump(plain);
  EXPECT_THAT(plain.err,
              ContainsRegex("^rlx: prefill [0-9.]+ tokens/s, decode [0-9.]+ tokens/s \\([0-9]+ "
                            "prompt tokens, [0-9]+ generated\\)\n$"))
      << dump(plain);
  EXPECT_THAT(plain.out, Not(HasSubstr("tokens/s"))) << dump(plain);
  ProcessResult json = rlx(g.args({"--json"}));
  ASSERT_EQ(json.exit_code, 0) << dump(json);
  EXPECT_EQ(json.err, "") << dump(json);
  json::Value doc = parse_json(json);
  for (const char* key : {"prefill_tokens_per_s", "decode_tokens_per_s"}) {
    const json::Value* rate = doc.find(key);
    ASSERT_TRUE(rate && rate->as_number()) << key << "\n" << dump(json);
    EXPECT_GT(rate->as_number()->value, 0) << key;
  }
}

}  // namespace
}  // namespace rlx::cli
