// The training step end to end on the cpu target: losses against a float64 NumPy reference
// (train_reference.py, run with the test venv's Python), resuming from a save, the learning-rate
// schedule and clipping as the program applies them, and the loss builders' values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/losses.h"
#include "rlx/core/mlp.h"
#include "rlx/core/passes.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

// Classes around one random centre each, `noise` the spread per coordinate: separable enough to
// learn, overlapping enough that the loss stays well above zero, where f32 and f64 would part
// by rounding rather than by a wrong gradient.
struct Dataset {
  Tensor x, labels;
};
Dataset clusters(int64_t n, int64_t dim, int64_t classes, uint32_t seed, float noise = 1.2f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centres(classes * dim);
  for (float& c : centres) c = normal(rng);
  Dataset d{Tensor(DType::kF32, {n, dim}), Tensor(DType::kI32, {n})};
  for (int64_t i = 0; i < n; ++i) {
    int32_t c = static_cast<int32_t>(rng() % classes);
    d.labels.as<int32_t>()[i] = c;
    for (int64_t k = 0; k < dim; ++k) d.x.as<float>()[i * dim + k] = centres[c * dim + k] + noise * normal(rng);
  }
  return d;
}

Tensor rows(const Tensor& t, int64_t at, int64_t count) {
  std::vector<int64_t> shape = t.shape();
  int64_t row = t.numel() / shape[0];
  shape[0] = count;
  Tensor out(t.dtype(), shape);
  size_t width = static_cast<size_t>(row) * dtype_size(t.dtype());
  std::memcpy(out.data(), static_cast<const char*>(t.data()) + at * width, count * width);
  return out;
}

std::string python() {
  if (const char* p = std::getenv("RLX_TEST_PYTHON")) return p;
  return RLX_TEST_VENV_PYTHON;
}

bool has_numpy() {
  return fs::exists(python()) && std::system((python() + " -c 'import numpy' 2>/dev/null").c_str()) == 0;
}

std::vector<double> read_numbers(const fs::path& file) {
  std::ifstream in(file);
  std::vector<double> v;
  for (double x; in >> x;) v.push_back(x);
  return v;
}

double accuracy(const std::vector<int64_t>& sizes, const NamedTensors& params, const Dataset& d) {
  Session session(test::cpu_target());
  CompiledModel eval = session.compile(params_as_inputs(mlp_classifier(sizes, 0, false)));
  NamedTensors in = params;
  in["x"] = d.x;
  Tensor logits = eval.run(in).at("logits");
  int64_t n = logits.shape()[0], c = logits.shape()[1], right = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.as<float>() + i * c;
    right += std::max_element(row, row + c) - row == d.labels.as<int32_t>()[i];
  }
  return static_cast<double>(right) / static_cast<double>(n);
}

struct ReferenceRun {
  std::string optimizer_text;  // for rlx
  std::string config_json;     // for train_reference.py (without sizes, batch, steps)
  int32_t micro_batches = 1;   // > 1: the batch in micro-batches whose gradients add up
};

void expect_matches_reference(const ReferenceRun& run) {
  if (!has_numpy()) GTEST_SKIP() << "no Python with numpy at " << python() << " (scripts/test.sh installs it)";
  const std::vector<int64_t> sizes = {20, 16, 4};
  const int64_t batch = 8, steps = 100;
  Dataset d = clusters(steps * batch, sizes[0], sizes.back(), 42);
  Graph model = mlp_classifier(sizes, 3, true);
  test::TempDir dir;
  write_safetensors(dir.path() / "init.safetensors", model.weights);
  write_safetensors(dir.path() / "data.safetensors", {{"x", d.x}, {"labels", d.labels}});
  std::ofstream(dir.path() / "config.json")
      << "{\"sizes\": [20, 16, 4], \"batch\": 8, \"steps\": 100, " << run.config_json << "}";
  std::string cmd = python() + " " + RLX_TRAIN_REFERENCE + " " + dir.path().string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<double> want = read_numbers(dir.path() / "losses.txt");
  ASSERT_EQ(want.size(), static_cast<size_t>(steps));

  PipelineTraining pp;
  pp.micro_batches = run.micro_batches;
  Trainer trainer = pp.pipelined()
                        ? Trainer(test::cpu_target(),
                                  specialize(model, {{"batch", batch / run.micro_batches}}),
                                  parse_optimizer(run.optimizer_text), pp)
                        : Trainer(test::cpu_target(), model, parse_optimizer(run.optimizer_text));
  double worst = 0;
  for (int64_t s = 0; s < steps; ++s) {
    double loss = trainer.step({{"x", rows(d.x, s * batch, batch)}, {"labels", rows(d.labels, s * batch, batch)}});
    EXPECT_NEAR(loss, want[s], 1e-4 * std::fabs(want[s])) << "step " << s;
    worst = std::max(worst, std::fabs(loss - want[s]) / std::fabs(want[s]));
  }
  std::printf("%s: losses %.4f -> %.4f, largest relative difference to float64 %.2e\n",
              run.optimizer_text.c_str(), want.front(), want.back(), worst);
  double ref_acc = read_numbers(dir.path() / "accuracy.txt").at(0);
  double acc = accuracy(sizes, trainer.parameters(), d);
  EXPECT_GT(ref_acc, 0.9) << "the reference did not learn the separable problem";
  EXPECT_GE(acc, ref_acc - 0.01);
}

TEST(Trainer, SgdMomentumMatchesNumpyFloat64) {
  expect_matches_reference({"sgd:lr=0.05,momentum=0.9,weight_decay=0.001",
                            "\"optimizer\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, \"nesterov\": false, "
                            "\"weight_decay\": 0.001"});
}

TEST(Trainer, SgdNesterovMatchesNumpyFloat64) {
  expect_matches_reference({"sgd:lr=0.03,momentum=0.8,nesterov=1",
                            "\"optimizer\": \"sgd\", \"lr\": 0.03, \"momentum\": 0.8, \"nesterov\": true, "
                            "\"weight_decay\": 0.0"});
}

TEST(Trainer, AdamWMatchesNumpyFloat64) {
  expect_matches_reference({"adamw:lr=0.01,weight_decay=0.01,beta1=0.9,beta2=0.999,eps=1e-8",
                            "\"optimizer\": \"adamw\", \"lr\": 0.01, \"weight_decay\": 0.01, \"beta1\": 0.9, "
                            "\"beta2\": 0.999, \"eps\": 1e-8"});
}

// Gradient accumulation: the batch of 8 as 4 micro-batches of 2 whose gradients add up before
// each update is the same step, so it follows the same float64 reference.
TEST(Trainer, MicroBatchedSgdAndAdamWMatchNumpyFloat64) {
  expect_matches_reference({"sgd:lr=0.05,momentum=0.9,weight_decay=0.001",
                            "\"optimizer\": \"sgd\", \"lr\": 0.05, \"momentum\": 0.9, \"nesterov\": false, "
                            "\"weight_decay\": 0.001",
                            4});
  expect_matches_reference({"adamw:lr=0.01,weight_decay=0.01,beta1=0.9,beta2=0.999,eps=1e-8",
                            "\"optimizer\": \"adamw\", \"lr\": 0.01, \"weight_decay\": 0.01, \"beta1\": 0.9, "
                            "\"beta2\": 0.999, \"eps\": 1e-8",
                            4});
}

TEST(Trainer, ResumeGivesTheSameLossCurve) {
  const std::vector<int64_t> sizes = {12, 8, 3};
  Dataset d = clusters(64, 12, 3, 5);
  auto batch = [&](int64_t s) {
    return NamedTensors{{"x", rows(d.x, (s % 8) * 8, 8)}, {"labels", rows(d.labels, (s % 8) * 8, 8)}};
  };
  for (const char* opt : {"sgd:lr=0.1,momentum=0.9", "adamw:lr=0.01"}) {
    SCOPED_TRACE(opt);
    Graph model = mlp_classifier(sizes, 11, true);
    Trainer whole(test::cpu_target(), model, parse_optimizer(opt));
    std::vector<double> want;
    for (int64_t s = 0; s < 10; ++s) want.push_back(whole.step(batch(s)));
    Trainer first(test::cpu_target(), model, parse_optimizer(opt));
    for (int64_t s = 0; s < 5; ++s) EXPECT_EQ(first.step(batch(s)), want[s]);
    test::TempDir dir;
    first.save(dir.path() / "state.safetensors");
    Trainer resumed(test::cpu_target(), model, parse_optimizer(opt));
    resumed.load(dir.path() / "state.safetensors");
    EXPECT_EQ(resumed.steps(), 5);
    for (int64_t s = 5; s < 10; ++s) EXPECT_EQ(resumed.step(batch(s)), want[s]) << "step " << s;
  }
}

// The step keeps Linear weights as W^T (TrainingGraph::transposed), which its user never sees:
// parameters(), save and load speak the model's [out, in], and the saved momentum lines up with
// the saved weights element by element (SGD: w1 = w0 - lr m1).
TEST(Trainer, WeightsKeptTransposedShowTheModelsLayout) {
  const std::vector<int64_t> sizes = {12, 8, 3};
  Dataset d = clusters(8, 12, 3, 5);
  Graph model = mlp_classifier(sizes, 11, true);
  Trainer t(test::cpu_target(), model, parse_optimizer("sgd:lr=0.5,momentum=0.9"));
  EXPECT_EQ(t.graph().transposed.count("fc0.weight"), 1u);
  EXPECT_EQ(t.graph().transposed.count("optimizer.m.fc0.weight"), 1u);
  EXPECT_EQ(t.graph().transposed.count("fc0.bias"), 0u);
  const Tensor& w0 = model.weights.at("fc0.weight");
  Tensor shown = t.parameters().at("fc0.weight");
  ASSERT_EQ(shown.shape(), (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(std::memcmp(shown.data(), w0.data(), w0.nbytes()), 0);
  t.step({{"x", d.x}, {"labels", d.labels}});
  test::TempDir dir;
  t.save(dir.path() / "state.safetensors");
  TensorMap saved = read_safetensors(dir.path() / "state.safetensors");
  const Tensor &w1 = saved.at("fc0.weight"), &m1 = saved.at("optimizer.m.fc0.weight");
  ASSERT_EQ(w1.shape(), (std::vector<int64_t>{8, 12}));
  ASSERT_EQ(m1.shape(), (std::vector<int64_t>{8, 12}));
  int moved = 0;
  for (int64_t i = 0; i < w1.numel(); ++i) {
    EXPECT_NEAR(w1.as<float>()[i], w0.as<float>()[i] - 0.5f * m1.as<float>()[i], 1e-6) << i;
    moved += w1.as<float>()[i] != w0.as<float>()[i];
  }
  EXPECT_GT(moved, 48) << "the step left most of fc0.weight as it was";
  EXPECT_EQ(std::memcmp(t.parameters().at("fc0.weight").data(), w1.data(), w1.nbytes()), 0);
  // A file with the weight as the step keeps it ([in, out]) is the wrong shape for the model.
  TensorMap wrong = saved;
  wrong["fc0.weight"] = Tensor(DType::kF32, {12, 8});
  write_safetensors(dir.path() / "wrong.safetensors", wrong);
  try {
    t.load(dir.path() / "wrong.safetensors");
    ADD_FAILURE() << "a [12,8] fc0.weight was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is f32[12,8] but the model needs f32[8,12]"),
              std::string::npos)
        << e.what();
  }
  Trainer resumed(test::cpu_target(), model, parse_optimizer("sgd:lr=0.5,momentum=0.9"));
  resumed.load(dir.path() / "state.safetensors");
  EXPECT_EQ(std::memcmp(resumed.parameters().at("fc0.weight").data(), w1.data(), w1.nbytes()), 0);
}

// A micro-batched trainer (the pipelined step with one stage) resumes like the one-program step:
// from its own save, and from one written by the one-program step, whose names it shares.
TEST(Trainer, MicroBatchedRunsResumeFromASave) {
  const std::vector<int64_t> sizes = {12, 8, 3};
  Dataset d = clusters(64, 12, 3, 5);
  auto batch = [&](int64_t s) {
    return NamedTensors{{"x", rows(d.x, (s % 8) * 8, 8)}, {"labels", rows(d.labels, (s % 8) * 8, 8)}};
  };
  PipelineTraining pp;
  pp.micro_batches = 2;
  const Graph model = mlp_classifier(sizes, 11, true);
  const Graph micro = specialize(model, {{"batch", 4}});
  const std::string opt = "adamw:lr=0.01,schedule=cosine,total=10";
  auto micro_batched = [&] { return Trainer(test::cpu_target(), micro, parse_optimizer(opt), pp); };
  Trainer whole = micro_batched();
  std::vector<double> want;
  for (int64_t s = 0; s < 10; ++s) want.push_back(whole.step(batch(s)));
  test::TempDir dir;
  Trainer first = micro_batched();
  for (int64_t s = 0; s < 5; ++s) first.step(batch(s));
  first.save(dir.path() / "micro.safetensors");
  Trainer one(test::cpu_target(), model, parse_optimizer(opt));
  for (int64_t s = 0; s < 5; ++s) one.step(batch(s));
  one.save(dir.path() / "one.safetensors");
  for (const char* file : {"micro.safetensors", "one.safetensors"}) {
    SCOPED_TRACE(file);
    Trainer resumed = micro_batched();
    resumed.load(dir.path() / file);
    EXPECT_EQ(resumed.steps(), 5);
    for (int64_t s = 5; s < 10; ++s)
      EXPECT_NEAR(resumed.step(batch(s)), want[s], 1e-5 * std::fabs(want[s])) << "step " << s;
  }
  // A file of another model leaves the trainer as it was, and says which tensor differs.
  write_safetensors(dir.path() / "other.safetensors", mlp_classifier({12, 9, 3}, 1, true).weights);
  Trainer resumed = micro_batched();
  try {
    resumed.load(dir.path() / "other.safetensors");
    ADD_FAILURE() << "a file of another model loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("but the model needs f32["), std::string::npos) << e.what();
  }
  EXPECT_EQ(resumed.steps(), 0);
  EXPECT_EQ(resumed.step(batch(0)), want[0]);
}

// On a target with a device (the gpu target on PoCL here; cuda, vulkan elsewhere) parameters and
// optimizer state stay on the device between steps: the losses must still follow the cpu's, and
// parameters(), save and load must see the device's current values.
TEST(Trainer, DeviceResidentStateFollowsTheCpu) {
  std::shared_ptr<Target> gpu;
  try {
    gpu = test::target_named("gpu");
  } catch (const std::exception& e) {
    GTEST_SKIP() << "the gpu target cannot run here: " << e.what();
  }
  if (!gpu->can_execute().ok) GTEST_SKIP() << "gpu cannot run here: " << gpu->can_execute().reason;
  const std::vector<int64_t> sizes = {12, 8, 3};
  Dataset d = clusters(64, 12, 3, 5);
  auto batch = [&](int64_t s) {
    return NamedTensors{{"x", rows(d.x, (s % 8) * 8, 8)}, {"labels", rows(d.labels, (s % 8) * 8, 8)}};
  };
  Graph model = mlp_classifier(sizes, 11, true);
  const std::string opt = "adamw:lr=0.01";
  Trainer cpu(test::cpu_target(), model, parse_optimizer(opt));
  Trainer dev(gpu, model, parse_optimizer(opt));
  ASSERT_NE(dev.program().device(), nullptr) << "the gpu target has a device";
  for (int64_t s = 0; s < 6; ++s) EXPECT_NEAR(dev.step(batch(s)), cpu.step(batch(s)), 1e-5) << "step " << s;
  for (const auto& [name, t] : cpu.parameters()) {
    const Tensor& got = dev.parameters().at(name);
    ASSERT_EQ(got.numel(), t.numel());
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_NEAR(got.scalar_at(i), t.scalar_at(i), 1e-5) << name;
  }
  // Saved from the device, loaded into a fresh device trainer: the next steps continue the curve.
  test::TempDir dir;
  dev.save(dir.path() / "state.safetensors");
  Trainer resumed(gpu, model, parse_optimizer(opt));
  resumed.load(dir.path() / "state.safetensors");
  for (int64_t s = 6; s < 9; ++s) {
    const double want = cpu.step(batch(s));
    EXPECT_NEAR(resumed.step(batch(s)), want, 1e-5) << "step " << s;
    EXPECT_NEAR(dev.step(batch(s)), want, 1e-5) << "step " << s;
  }
}

// loss = w * 1 with w a parameter: each step lowers w by the step's learning rate (times the
// clipping scale), so consecutive losses show what the program applied.
std::vector<double> applied_rates(const std::string& opt, int steps) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {1}});
  ValueId w = b.param("w", Tensor::from<float>(DType::kF32, {1}, {10.0f}));
  ValueId loss = b.reduce(b.mul(w, x), {0}, ReduceKind::kSum);
  b.output(loss);
  Trainer t(test::cpu_target(), g, parse_optimizer(opt));
  std::vector<double> losses;
  for (int s = 0; s <= steps; ++s) losses.push_back(t.step({{"x", Tensor::from<float>(DType::kF32, {1}, {1.0f})}}));
  std::vector<double> rates;
  for (int s = 0; s < steps; ++s) rates.push_back(losses[s] - losses[s + 1]);
  return rates;
}

// Data parallelism averages the gradients and the loss in buckets of at most 25 MB, one
// AllReduce each: the MLP's four gradients and its loss take one; a 32 MB weight takes a bucket
// of its own and the rest another.
TEST(Trainer, DataParallelGradientsTravelInBuckets) {
  auto all_reduces = [](const std::vector<int64_t>& sizes) {
    OptimizerConfig c = parse_optimizer("sgd:lr=0.1");
    c.data_parallel = 2;
    const Graph g = build_training_graph(mlp_classifier(sizes, 0, true), c).graph;
    std::vector<std::string> shapes;
    for (const Node& n : g.nodes)
      if (n.op == "AllReduce") shapes.push_back(g.type(n.outputs[0]).str());
    return shapes;
  };
  // 784*128 + 128 + 128*10 + 10 + the loss.
  EXPECT_EQ(all_reduces({784, 128, 10}), std::vector<std::string>{"f32[101771]"});
  // fc0.weight is 4096*2048*4 bytes = 32 MB; the rest (fc1, fc0.bias, loss) is filled first.
  // The step keeps fc0.weight as W^T ([in, out], TrainingGraph::transposed): so is its gradient.
  EXPECT_EQ(all_reduces({4096, 2048, 10}),
            (std::vector<std::string>{"f32[22539]", "f32[4096,2048]"}));
  // The first bucket closes at 1 MB: fc1.weight (512*512*4 bytes) would overflow it after the
  // loss, fc2 and fc1.bias (1 + 5130 + 512 values), so it starts the second.
  EXPECT_EQ(all_reduces({784, 512, 512, 10}),
            (std::vector<std::string>{"f32[5643]", "f32[664064]"}));
}

TEST(Trainer, LearningRateScheduleAndClipping) {
  OptimizerConfig c = parse_optimizer("sgd:lr=0.1,schedule=cosine,warmup=2,total=4,min_lr=0.02");
  // Hand values: warm-up 0.05, 0.1; then 0.02 + 0.04 (1 + cos(pi k / 4)) for k = 0..4.
  const double want[] = {0.05, 0.1, 0.1, 0.02 + 0.04 * (1 + std::cos(M_PI / 4)), 0.06,
                         0.02 + 0.04 * (1 + std::cos(3 * M_PI / 4)), 0.02, 0.02};
  std::vector<double> got = applied_rates(optimizer_text(c), 8);
  for (int s = 0; s < 8; ++s) {
    EXPECT_NEAR(learning_rate_at(c, s), want[s], 1e-12) << s;
    EXPECT_NEAR(got[s], want[s], 1e-5) << s;
  }
  for (double r : applied_rates("sgd:lr=0.1,clip=0.5", 3)) EXPECT_NEAR(r, 0.05, 1e-6);
  for (double r : applied_rates("sgd:lr=0.1,clip=5", 3)) EXPECT_NEAR(r, 0.1, 1e-6);
}

TEST(Trainer, OptimizerTextErrorsNameTheProblem) {
  auto message = [](const std::string& t) {
    try {
      parse_optimizer(t);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("rmsprop:lr=1").find("unknown kind 'rmsprop'"), std::string::npos);
  EXPECT_NE(message("sgd:lr=fast").find("lr=fast is not a number"), std::string::npos);
  EXPECT_NE(message("sgd:speed=1").find("unknown key 'speed'"), std::string::npos);
  EXPECT_NE(message("adam:momentum=0.9").find("beta1"), std::string::npos);
  OptimizerConfig c = parse_optimizer("sgd:lr=0.02,momentum=0.9,nesterov=1,weight_decay=0.0005");
  EXPECT_EQ(c.kind, OptimizerConfig::Kind::kSgd);
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
  EXPECT_TRUE(c.nesterov);
  EXPECT_EQ(optimizer_text(parse_optimizer(optimizer_text(c))), optimizer_text(c));
}

// The losses' values against hand computation in double.
TEST(Losses, ValuesMatchHandComputation) {
  Graph g;
  GraphBuilder b(g);
  ValueId logits = b.input("logits", {DType::kF64, {2, 3}});
  ValueId labels = b.input("labels", {DType::kI64, {2}});
  ValueId p = b.input("p", {DType::kF64, {4}});
  ValueId t = b.input("t", {DType::kF64, {4}});
  for (auto [v, name] : {std::pair{softmax_cross_entropy(b, logits, labels), "ce"},
                         {mean_squared_error(b, p, t), "mse"},
                         {binary_cross_entropy(b, p, t, false), "bce"},
                         {binary_cross_entropy(b, p, t, true), "bce_logits"}}) {
    g.values[v].name = name;
    b.output(v);
  }
  const std::vector<double> lg = {1.0, 2.0, 0.5, -1.0, 3.0, 0.0}, pv = {0.1, 0.8, 0.5, 0.3}, tv = {0.0, 1.0, 1.0, 0.2};
  Session s(test::cpu_target());
  NamedTensors out = s.compile(g).run({{"logits", Tensor::from<double>(DType::kF64, {2, 3}, lg)},
                                       {"labels", Tensor::from<int64_t>(DType::kI64, {2}, {2, 1})},
                                       {"p", Tensor::from<double>(DType::kF64, {4}, pv)},
                                       {"t", Tensor::from<double>(DType::kF64, {4}, tv)}});
  double ce = 0;
  for (int i = 0; i < 2; ++i) {
    double z = 0;
    for (int k = 0; k < 3; ++k) z += std::exp(lg[i * 3 + k]);
    ce += std::log(z) - lg[i * 3 + (i == 0 ? 2 : 1)];
  }
  double mse = 0, bce = 0, bce_logits = 0;
  for (int i = 0; i < 4; ++i) {
    mse += (pv[i] - tv[i]) * (pv[i] - tv[i]);
    bce -= tv[i] * std::log(pv[i]) + (1 - tv[i]) * std::log(1 - pv[i]);
    double sig = 1 / (1 + std::exp(-pv[i]));
    bce_logits -= tv[i] * std::log(sig) + (1 - tv[i]) * std::log(1 - sig);
  }
  EXPECT_NEAR(out.at("ce").scalar_at(0), ce / 2, 1e-12);
  EXPECT_NEAR(out.at("mse").scalar_at(0), mse / 4, 1e-12);
  EXPECT_NEAR(out.at("bce").scalar_at(0), bce / 4, 1e-12);
  EXPECT_NEAR(out.at("bce_logits").scalar_at(0), bce_logits / 4, 1e-12);
}

}  // namespace
}  // namespace rlx
