// `rlx train --pp P [--micro-batches M]`: pipeline stages on P ranks (docs/training.md, "Pipeline
// parallelism") follow the one-process loss curve of the whole batch (clipping by the global norm
// included), save every stage's parameters from rank 0, resume from them, and refuse what they
// cannot do by name.
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

// Clipping by the global gradient norm: the stages add their sums of squares over the pipeline,
// so 2 stages, and 2 stages of 2 data-parallel ranks, scale their gradients as one process does.
// The clip binds: without it the same run's losses are far from the clipped ones.
TEST_F(TrainPipelineCliTest, ClippingByTheGlobalNormFollowsOneProcess) {
  auto run = [&](const std::string& optimizer, std::vector<std::string> more) {
    std::vector<std::string> args = {"train",   "--model", "mlp:784,64,32,10", "--data",
                                     "synthetic:600", "--batch", "60", "--epochs", "3",
                                     "--optimizer", optimizer};
    args.insert(args.end(), more.begin(), more.end());
    return losses(train(args));
  };
  const std::string clipped = "sgd:lr=0.5,momentum=0.9,clip=0.05";
  const std::vector<double> want = run(clipped, {});
  const std::vector<double> unclipped = run("sgd:lr=0.5,momentum=0.9", {});
  ASSERT_EQ(want.size(), 3u);
  ASSERT_EQ(unclipped.size(), 3u);
  EXPECT_GT(std::abs(unclipped[0] - want[0]), 0.1) << "clip=0.05 does not bind";
  expect_near_all(run(clipped, {"--pp", "2", "--micro-batches", "3", "--nproc", "2"}), want, 1e-5,
                  "--pp 2");
  expect_near_all(run(clipped, {"--pp", "2", "--micro-batches", "3", "--nproc", "4"}), want, 1e-5,
                  "--pp 2 --nproc 4");
}

// --micro-batches on data-parallel ranks without --pp: one stage of 2 replicas, each
// accumulating the micro-batches of its half of every batch, follows one process (with and
// without clipping, which then needs no exchange beyond the replicas' mean).
TEST_F(TrainPipelineCliTest, MicroBatchesOnDataParallelRanksFollowOneProcess) {
  for (const std::string opt : {"sgd:lr=0.05,momentum=0.9", "sgd:lr=0.5,momentum=0.9,clip=0.05"}) {
    const std::vector<std::string> base = {"train", "--model", "mlp:784,64,32,10", "--data",
                                           "synthetic:600", "--batch", "60", "--epochs", "3",
                                           "--optimizer", opt};
    std::vector<std::string> args = base;
    const std::vector<double> want = losses(train(args));
    args.insert(args.end(), {"--nproc", "2", "--micro-batches", "2"});
    ASSERT_EQ(want.size(), 3u);
    expect_near_all(losses(train(args)), want, 1e-5, opt + " --nproc 2 --micro-batches 2");
  }
}

// --resume: 1 epoch, --save, then 1 epoch more from the file gives the second epoch of an
// uninterrupted 2-epoch run, in one process and on 2 stages (each taking its own parameters and
// optimizer state from the file rank 0 wrote). The cosine schedule makes the step count matter.
TEST_F(TrainPipelineCliTest, AResumedRunContinuesTheUninterruptedOne) {
  auto run = [&](const std::string& epochs, std::vector<std::string> more) {
    std::vector<std::string> args = {"train",         "--model",     "mlp:784,64,32,10",
                                     "--data",        "synthetic:600", "--batch", "60",
                                     "--epochs",      epochs,        "--optimizer",
                                     "sgd:lr=0.05,momentum=0.9,schedule=cosine,total=20"};
    args.insert(args.end(), more.begin(), more.end());
    return train(args);
  };
  const std::vector<double> want = losses(run("2", {}));
  ASSERT_EQ(want.size(), 2u);
  for (const std::vector<std::string>& pp :
       std::vector<std::vector<std::string>>{{}, {"--pp", "2", "--micro-batches", "3"}}) {
    const std::string what = pp.empty() ? "one process" : "--pp 2";
    const fs::path state = dir_ / (pp.empty() ? "one.safetensors" : "pp.safetensors");
    std::vector<std::string> first = pp, second = pp;
    first.insert(first.end(), {"--save", state.string()});
    second.insert(second.end(), {"--resume", state.string()});
    expect_near_all(losses(run("1", first)), {want[0]}, 1e-5, what + ", first epoch");
    const json::Value resumed = run("1", second);
    expect_near_all(losses(resumed), {want[1]}, 1e-5, what + ", resumed");
    EXPECT_EQ(resumed.find("steps")->as_number()->as_i64(), 20) << what;
  }
  // A missing file, and one of another model, are refused naming the file and the tensor.
  auto fails = [&](std::vector<std::string> more, const std::string& says) {
    std::vector<std::string> args = {"train", "--model", "mlp:784,64,32,11", "--data",
                                     "synthetic:120", "--batch", "60", "--collective-timeout", "60"};
    args.insert(args.end(), more.begin(), more.end());
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_THAT(r.err, HasSubstr(says)) << dump(r);
  };
  fails({"--resume", (dir_ / "none.safetensors").string()}, "none.safetensors: no such file");
  for (const std::vector<std::string> pp :
       std::vector<std::vector<std::string>>{{}, {"--pp", "2", "--micro-batches", "2"}}) {
    std::vector<std::string> more = pp;
    more.insert(more.end(), {"--resume", (dir_ / "one.safetensors").string()});
    fails(more, "one.safetensors: tensor 'fc2.bias' is f32[10] but the model needs f32[11]");
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
  auto run = [&](std::vector<std::string> more, const std::string& opt = "adamw:lr=0.01") {
    std::vector<std::string> args = {"train",  "--model",     model.string(), "--task", "causal-lm",
                                     "--data", data.string(), "--batch",      "4",      "--epochs",
                                     "2",      "--optimizer", opt};
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
  // Clipping by the global norm counts the tied table's gradient once, on the stage that owns
  // it (the head's part came back as a cotangent): SGD, where the scale shows in every update,
  // still follows one process, and the clip binds.
  auto sgd = [&](const std::string& opt, std::vector<std::string> more) {
    return losses(run(more, opt));
  };
  const std::vector<double> clipped = sgd("sgd:lr=0.5,clip=0.5", {});
  EXPECT_GT(std::abs(sgd("sgd:lr=0.5", {}).back() - clipped.back()), 0.1) << "clip=0.5 is loose";
  expect_near_all(sgd("sgd:lr=0.5,clip=0.5", {"--pp", "2", "--micro-batches", "2"}), clipped, 1e-5,
                  "--pp 2 with clip");
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
  fails({"--micro-batches", "4", "--nproc", "2"},
        "gives each of the 2 data-parallel ranks 30 rows, which do not split into 4");
  fails({"--task", "causal-lm", "--resume", "run.safetensors"},
        "--task causal-lm saves a model folder (weights only)");
}

}  // namespace
}  // namespace rlx::cli
