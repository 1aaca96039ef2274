// `rlx train --pp P [--micro-batches M]`: pipeline stages on P ranks (docs/training.md, "Pipeline
// parallelism") follow the one-process loss curve of the whole batch, save every stage's
// parameters from rank 0, and refuse what they cannot do by name.
#include <cmath>
#include <tuple>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

class TrainPipelineCliTest : public CliTest {
 protected:
  json::Value train(std::vector<std::string> args) {
    args.insert(args.end(), {"--json", "--collective-timeout", "60"});
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    return r.exit_code == 0 ? parse_json(r) : json::Value{};
  }
  static std::vector<double> losses(const json::Value& doc, const char* key = "epoch_losses") {
    std::vector<double> out;
    if (const json::Value* a = doc.find(key))
      for (const json::Value& v : *a->as_array()) out.push_back(v.as_number()->value);
    return out;
  }
};

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i])) << what << ", epoch " << i + 1;
}

// 784-64-32-10 on 2 stages (fc0 | fc1, fc2), on 3 (one Linear each) and on 2 stages of 2
// data-parallel ranks, batch 60 in micro-batches of 10 and 20: the same steps as one process on
// whole batches, so the same losses and, read back from --save (written by rank 0 with every
// stage's tensors), the same parameters.
TEST_F(TrainPipelineCliTest, StagesFollowTheOneProcessLossCurveAndSaveEveryParameter) {
  const std::vector<std::string> base = {"train",
                                         "--model",
                                         "mlp:784,64,32,10",
                                         "--data",
                                         "synthetic:600",
                                         "--batch",
                                         "60",
                                         "--epochs",
                                         "3",
                                         "--optimizer",
                                         "sgd:lr=0.05,momentum=0.9"};
  auto with = [&](std::vector<std::string> more, const fs::path& save) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), {"--save", save.string()});
    return train(args);
  };
  const json::Value one = with({}, dir_ / "one.safetensors");
  const std::vector<double> want = losses(one);
  ASSERT_EQ(want.size(), 3u);
  EXPECT_LT(want[2], want[0]);
  const TensorMap ref = read_safetensors(dir_ / "one.safetensors");
  // {--pp, --micro-batches, --nproc}: the last runs 2 stages of 2 data-parallel ranks each.
  for (const auto& [pp, mb, nproc] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"2", "6", "2"}, {"3", "3", "3"}, {"2", "3", "4"}}) {
    const fs::path save = dir_ / ("pp" + pp + "x" + nproc + ".safetensors");
    const json::Value doc = with({"--pp", pp, "--micro-batches", mb, "--nproc", nproc}, save);
    expect_near_all(losses(doc), want, 1e-5, "--pp " + pp + " --nproc " + nproc);
    EXPECT_EQ(doc.find("steps")->as_number()->as_i64(), 30);
    EXPECT_EQ(doc.find("accuracy")->as_number()->value, one.find("accuracy")->as_number()->value);
    const TensorMap got = read_safetensors(save);
    for (const auto& [name, t] : ref) {
      ASSERT_TRUE(got.count(name)) << "--pp " << pp << " saved no " << name;
      const Tensor& g = got.at(name);
      ASSERT_EQ(g.shape(), t.shape()) << name;
      double worst = 0;
      for (int64_t i = 0; i < t.numel(); ++i)
        worst = std::max(worst, std::abs(g.scalar_at(i) - t.scalar_at(i)));
      EXPECT_LT(worst, 1e-5) << "--pp " << pp << ": " << name;
    }
  }
}

// qwen3-tiny's head reads the embedding table (tied), so stage 0 sends the table to stage 1 and
// receives its cotangent back; with adamw the losses still follow one process, and the folder
// rank 0 saves reloads.
TEST_F(TrainPipelineCliTest, ADecoderWithTiedEmbeddingsTrainsOnTwoStages) {
  const fs::path model = fs::path(RLX_FIXTURES_DIR) / "qwen3-tiny";
  Tensor ids(DType::kI64, {8, 12});
  for (int64_t i = 0; i < ids.numel(); ++i) ids.as<int64_t>()[i] = (i * 733 + 17) % 2048;
  const fs::path data = dir_ / "tokens.safetensors", out = dir_ / "tuned";
  write_safetensors(data, {{"input_ids", ids}}, {});
  auto run = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"train",  "--model",     model.string(), "--task", "causal-lm",
                                     "--data", data.string(), "--batch",      "4",      "--epochs",
                                     "2",      "--optimizer", "adamw:lr=0.01"};
    args.insert(args.end(), more.begin(), more.end());
    return train(args);
  };
  const json::Value one = run({});
  const json::Value two = run({"--pp", "2", "--micro-batches", "2", "--save", out.string()});
  expect_near_all(losses(two), losses(one), 1e-4, "--pp 2");
  EXPECT_LT(losses(two).back(), losses(two).front());
  ProcessResult r =
      rlx({"generate", out.string(), "--prompt-ids", "1,2,3", "-n", "4", "--ignore-eos", "--json"});
  EXPECT_EQ(r.exit_code, 0) << dump(r);
}

TEST_F(TrainPipelineCliTest, WhatStagesCannotDoIsRefusedByName) {
  const std::vector<std::string> base = {
      "train",   "--model", "mlp:784,32,10",        "--data", "synthetic:120",
      "--batch", "60",      "--collective-timeout", "60"};
  auto fails = [&](std::vector<std::string> more, const std::string& says) {
    std::vector<std::string> args = base;
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = rlx(args);
    EXPECT_NE(r.exit_code, 0) << dump(r);
    EXPECT_THAT(r.err, HasSubstr(says)) << dump(r);
  };
  fails({"--pp", "2", "--nproc", "3"}, "--pp 2 trains 2 stages, each on the same number of ranks");
  fails({"--pp", "2", "--nproc", "4", "--micro-batches", "4"},
        "gives each of a stage's 2 ranks 30 rows, which do not split into 4");
  fails({"--pp", "2", "--micro-batches", "7"},
        "--batch 60 does not split into 7 equal micro-batches");
  fails({"--pp", "3"}, "cannot be cut into 3 stages");
  fails({"--pp", "2", "--optimizer", "sgd:lr=0.1,clip=1"}, "global gradient norm");
  fails({"--micro-batches", "2", "--nproc", "2"}, "--micro-batches with data-parallel ranks");
}

}  // namespace
}  // namespace rlx::cli
