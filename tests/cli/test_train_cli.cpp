// `rlx train`: synthetic data and MNIST IDX files (gzip and plain), --json, --save, and the
// errors a user meets first.
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>

#include "cli_fixture.h"
#include "rlx/core/half.h"
#include "rlx/core/png.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

class TrainCliTest : public CliTest {
 protected:
  static std::string read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  // `rlx train ARGS --json`'s epoch losses (empty, after a failure, when it does not succeed).
  std::vector<double> epoch_losses(std::vector<std::string> args) {
    args.push_back("--json");
    ProcessResult r = rlx(args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    std::vector<double> out;
    if (r.exit_code != 0) return out;
    const json::Value doc = parse_json(r);
    for (const json::Value& v : *doc.find("epoch_losses")->as_array())
      out.push_back(v.as_number()->value);
    return out;
  }
  // An IDX file of unsigned bytes: magic, big-endian dims, data; gzip-compressed when `gz`.
  void write_idx(const std::string& name, const std::vector<uint32_t>& dims,
                 const std::vector<uint8_t>& data, bool gz) {
    std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
    for (uint32_t d : dims)
      for (int s = 24; s >= 0; s -= 8) bytes.push_back(static_cast<char>((d >> s) & 0xFF));
    bytes.append(data.begin(), data.end());
    fs::path p = dir_ / "mnist" / name;
    fs::create_directories(p.parent_path());
    if (!gz) {
      std::ofstream(p, std::ios::binary) << bytes;
      return;
    }
    gzFile f = gzopen(p.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
  }

  // n images whose class is the row band (of 10) that is bright: learnable in a few steps.
  void write_split(const std::string& prefix, uint32_t n, bool gz) {
    std::vector<uint8_t> images(n * 784, 0), labels(n);
    for (uint32_t i = 0; i < n; ++i) {
      labels[i] = static_cast<uint8_t>(i % 10);
      for (int r = labels[i] * 2; r < labels[i] * 2 + 3; ++r)
        for (int c = 0; c < 28; ++c) images[i * 784 + r * 28 + c] = 255;
    }
    write_idx(prefix + "-images-idx3-ubyte" + (gz ? ".gz" : ""), {n, 28, 28}, images, gz);
    write_idx(prefix + "-labels-idx1-ubyte" + (gz ? ".gz" : ""), {n}, labels, gz);
  }
};

TEST_F(TrainCliTest, SyntheticDataTrainsAndReportsJson) {
  ProcessResult r = rlx({"train", "--model", "mlp:784,32,10", "--data", "synthetic:1024", "--batch", "64",
                         "--epochs", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  const json::Value* losses = doc.find("epoch_losses");
  ASSERT_TRUE(losses && losses->as_array() && losses->as_array()->size() == 2) << r.out;
  EXPECT_LT((*losses->as_array())[1].as_number()->value, (*losses->as_array())[0].as_number()->value);
  ASSERT_TRUE(doc.find("images_per_s") && doc.find("images_per_s")->as_number());
  EXPECT_GT(doc.find("images_per_s")->as_number()->value, 0);
  ASSERT_TRUE(doc.find("accuracy") && doc.find("accuracy")->as_number()) << r.out;
  EXPECT_GT(doc.find("accuracy")->as_number()->value, 0.5);
  EXPECT_EQ(doc.find("steps")->as_number()->as_i64(), 32);
  EXPECT_THAT(r.err, HasSubstr("epoch 2/2: loss"));
}

// Data parallelism: 2 and 3 ranks, each with its share of every batch, averaging gradients with
// AllReduce, follow the single process's loss curve (the same steps on the same batches).
TEST_F(TrainCliTest, DataParallelRanksFollowTheSingleRankLossCurve) {
  auto losses = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"train", "--model", "mlp:784,16,10", "--data", "synthetic:540",
                                      "--batch", "90", "--epochs", "3", "--collective-timeout", "60"};
    args.insert(args.end(), more.begin(), more.end());
    return epoch_losses(args);
  };
  const std::vector<double> one = losses({});
  ASSERT_EQ(one.size(), 3u);
  EXPECT_LT(one[2], one[0]);
  for (const char* nproc : {"2", "3"}) {
    const std::vector<double> many = losses({"--nproc", nproc});
    ASSERT_EQ(many.size(), one.size()) << nproc;
    for (size_t e = 0; e < one.size(); ++e)
      EXPECT_NEAR(many[e], one[e], 1e-5 * std::abs(one[e])) << nproc << " ranks, epoch " << e + 1;
  }
  ProcessResult uneven = rlx({"train", "--model", "mlp:784,16,10", "--data", "synthetic:540",
                              "--batch", "90", "--nproc", "4"});
  EXPECT_NE(uneven.exit_code, 0) << dump(uneven);
  EXPECT_THAT(uneven.err, HasSubstr("--batch 90 does not split into 4 equal shares")) << dump(uneven);
  ProcessResult tp = rlx({"train", "--model", "mlp:784,16,10", "--data", "synthetic:540", "--tp", "2"});
  EXPECT_NE(tp.exit_code, 0) << dump(tp);
  EXPECT_THAT(tp.err, HasSubstr("--tp")) << dump(tp);  // not an option of train
}

// --plot draws every step's loss: the curve (blue, 31,90,200) starts higher on the left than it
// ends on the right, since the loss falls; the path is in the JSON.
TEST_F(TrainCliTest, PlotDrawsTheFallingLossOfEveryStep) {
  const fs::path plot = dir_ / "loss.png";
  ProcessResult r = rlx({"train", "--model", "mlp:784,32,10", "--data", "synthetic:1024", "--batch",
                         "64", "--epochs", "2", "--plot", plot.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  const json::Value doc = parse_json(r);
  const json::Value* path = doc.find("plot");
  ASSERT_TRUE(path && path->as_string()) << r.out;
  EXPECT_EQ(*path->as_string(), plot.string());
  Tensor img = read_png_rgb(plot);
  ASSERT_EQ(img.shape(), (std::vector<int64_t>{360, 640, 3}));
  const uint8_t* px = img.as<uint8_t>();
  // The topmost curve pixel of a column, or -1.
  auto curve_top = [&](int64_t x) {
    for (int64_t y = 0; y < 360; ++y) {
      const uint8_t* p = px + (y * 640 + x) * 3;
      if (p[0] == 31 && p[1] == 90 && p[2] == 200) return y;
    }
    return int64_t{-1};
  };
  const int64_t left = curve_top(22), right = curve_top(618);
  ASSERT_GE(left, 0);
  ASSERT_GE(right, 0);
  EXPECT_LT(left, right) << "the curve should fall from left to right";
}

TEST_F(TrainCliTest, ReadsMnistIdxFilesGzipAndPlainAndSavesState) {
  write_split("train", 200, /*gz=*/true);
  write_split("t10k", 50, /*gz=*/false);
  fs::path out = dir_ / "state.safetensors";
  ProcessResult r = rlx({"train", "--model", "mlp:784,16,10", "--data", (dir_ / "mnist").string(), "--batch",
                         "50", "--epochs", "3", "--optimizer", "adamw:lr=0.01", "--save", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  EXPECT_EQ(doc.find("steps")->as_number()->as_i64(), 12);
  ASSERT_TRUE(doc.find("accuracy")->as_number()) << r.out;
  EXPECT_GT(doc.find("accuracy")->as_number()->value, 0.9) << r.out;
  TensorMap saved = read_safetensors(out);
  ASSERT_TRUE(saved.count("fc0.weight") && saved.count("fc1.bias") && saved.count("optimizer.v.fc0.weight"));
  EXPECT_EQ(saved.at("fc0.weight").shape(), (std::vector<int64_t>{16, 784}));
  EXPECT_EQ(saved.at("optimizer.step").scalar_at(0), 12);
}

// A model file whose graph ends in its loss: least squares y = x w^T + b as IR text with its
// params (zeros) beside it, on data from a known w* and b*. One step over all the samples has
// the loss sum(y^2) (w and b start at zero), and training recovers w* and b*.
class TrainFileTest : public TrainCliTest {
 protected:
  void SetUp() override {
    TrainCliTest::SetUp();
    model_ = write("linreg.rlx",
                   "graph @linreg(%x: f32[B,3], %y: f32[B,1]) params(%w: f32[1,3], %b: f32[1]) {\n"
                   "  %p = Linear(%x, %w, %b) : f32[B,1]\n"
                   "  %d = Sub(%p, %y) : f32[B,1]\n"
                   "  %s = Mul(%d, %d) : f32[B,1]\n"
                   "  %loss = reduce_sum(%s) {axes = [0, 1]} : f32[]\n"
                   "  return %loss\n}\n");
    write_safetensors(dir_ / "linreg.safetensors",
                      {{"w", Tensor(DType::kF32, {1, 3})}, {"b", Tensor(DType::kF32, {1})}}, {});
    Tensor x(DType::kF32, {kSamples, 3}), y(DType::kF32, {kSamples, 1});
    uint32_t state = 12345;
    for (int64_t i = 0; i < kSamples; ++i) {
      double t = 0.25;  // b*
      for (int64_t j = 0; j < 3; ++j) {
        state = state * 1664525u + 1013904223u;
        const float v = static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f;
        x.as<float>()[i * 3 + j] = v;
        t += kW[j] * v;
      }
      y.as<float>()[i] = static_cast<float>(t);
      sum_y2_ += static_cast<double>(y.as<float>()[i]) * y.as<float>()[i];
    }
    data_ = dir_ / "data.safetensors";
    write_safetensors(data_, {{"x", x}, {"y", y}}, {});
  }
  static constexpr int64_t kSamples = 256;
  static constexpr double kW[3] = {2.0, -1.0, 0.5};
  fs::path model_, data_;
  double sum_y2_ = 0;
};

TEST_F(TrainFileTest, TrainsAGraphThatEndsInItsLoss) {
  ProcessResult r = rlx({"train", "--model", model_.string(), "--data", data_.string(), "--batch",
                         std::to_string(kSamples), "--epochs", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  const double first = (*doc.find("epoch_losses")->as_array())[0].as_number()->value;
  EXPECT_NEAR(first, sum_y2_, 1e-4 * sum_y2_);
  EXPECT_GT(doc.find("samples_per_s")->as_number()->value, 0);

  fs::path out = dir_ / "trained.safetensors";
  r = rlx({"train", "--model", model_.string(), "--data", data_.string(), "--batch", "16",
           "--epochs", "30", "--optimizer", "sgd:lr=0.02,momentum=0.9", "--save", out.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("(2 params)"));
  TensorMap saved = read_safetensors(out);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(saved.at("w").as<float>()[j], kW[j], 1e-3) << j;
  EXPECT_NEAR(saved.at("b").as<float>()[0], 0.25, 1e-3);
}

// A model file trained data-parallel: the same linear regression with a mean loss (the sum over
// dim_size of the batch) follows the single process's loss curve over 2 ranks; the summed loss
// is refused, since averaging the ranks' gradients would halve its steps.
TEST_F(TrainFileTest, DataParallelRanksFollowTheSingleProcessWithAMeanLoss) {
  const fs::path mean = write("linreg_mean.rlx",
                              "graph @linreg(%x: f32[B,3], %y: f32[B,1]) params(%w: f32[1,3], "
                              "%b: f32[1]) {\n"
                              "  %p = Linear(%x, %w, %b) : f32[B,1]\n"
                              "  %d = Sub(%p, %y) : f32[B,1]\n"
                              "  %s = Mul(%d, %d) : f32[B,1]\n"
                              "  %t = reduce_sum(%s) {axes = [0, 1]} : f32[]\n"
                              "  %n = dim_size(%x) {dim = 0} : i64[]\n"
                              "  %nf = convert(%n) {dtype = f32} : f32[]\n"
                              "  %loss = div(%t, %nf) : f32[]\n"
                              "  return %loss\n}\n");
  fs::copy_file(dir_ / "linreg.safetensors", dir_ / "linreg_mean.safetensors");
  auto losses = [&](const fs::path& model, std::vector<std::string> more) {
    std::vector<std::string> args = {"train",        "--model", model.string(), "--data",
                                     data_.string(), "--batch", "32",           "--epochs",
                                     "3",            "--collective-timeout",    "60"};
    args.insert(args.end(), more.begin(), more.end());
    return epoch_losses(args);
  };
  const std::vector<double> one = losses(mean, {});
  ASSERT_EQ(one.size(), 3u);
  EXPECT_LT(one[2], one[0]);
  const std::vector<double> two = losses(mean, {"--nproc", "2"});
  ASSERT_EQ(two.size(), one.size());
  for (size_t e = 0; e < one.size(); ++e)
    EXPECT_NEAR(two[e], one[e], 1e-5 * std::abs(one[e])) << "epoch " << e + 1;
  ProcessResult summed = rlx({"train", "--model", model_.string(), "--data", data_.string(),
                              "--batch", "32", "--nproc", "2", "--collective-timeout", "60"});
  EXPECT_NE(summed.exit_code, 0) << dump(summed);
  EXPECT_THAT(summed.err, HasSubstr("it sums over the samples")) << dump(summed);
  EXPECT_THAT(summed.err, HasSubstr("divide the loss by the batch size")) << dump(summed);
}

TEST_F(TrainFileTest, DataAndModelErrorsNameTheProblem) {
  auto err = [&](std::vector<std::string> args) {
    std::vector<std::string> all = {"train", "--model", model_.string(), "--batch", "16"};
    all.insert(all.end(), args.begin(), args.end());
    ProcessResult r = rlx(all);
    EXPECT_NE(r.exit_code, 0) << dump(r);
    return r.err;
  };
  EXPECT_THAT(err({"--data", "synthetic:64"}), HasSubstr("not a .safetensors or .npz file"));
  fs::path only_x = dir_ / "only_x.safetensors";
  write_safetensors(only_x, {{"x", Tensor(DType::kF32, {32, 3})}}, {});
  EXPECT_THAT(err({"--data", only_x.string()}), HasSubstr("has no tensor 'y', an input of"));
  fs::path extra = dir_ / "extra.safetensors";
  write_safetensors(extra, {{"x", Tensor(DType::kF32, {32, 3})}, {"y", Tensor(DType::kF32, {32, 1})},
                            {"z", Tensor(DType::kF32, {32})}}, {});
  EXPECT_THAT(err({"--data", extra.string()}), HasSubstr("'z' that is no input"));
  fs::path uneven = dir_ / "uneven.safetensors";
  write_safetensors(uneven, {{"x", Tensor(DType::kF32, {32, 3})}, {"y", Tensor(DType::kF32, {30, 1})}}, {});
  EXPECT_THAT(err({"--data", uneven.string()}), HasSubstr("samples but"));
  fs::path wide = dir_ / "wide.safetensors";
  write_safetensors(wide, {{"x", Tensor(DType::kF32, {32, 4})}, {"y", Tensor(DType::kF32, {32, 1})}}, {});
  EXPECT_THAT(err({"--data", wide.string()}), HasSubstr("'x' is f32[32,4] but the input is"));
  // A graph whose output is not a scalar is no loss.
  fs::path not_loss = write("notloss.rlx",
                            "graph @g(%x: f32[B,3]) params(%w: f32[1,3], %b: f32[1]) {\n"
                            "  %p = Linear(%x, %w, %b) : f32[B,1]\n  return %p\n}\n");
  write_safetensors(dir_ / "notloss.safetensors",
                    {{"w", Tensor(DType::kF32, {1, 3})}, {"b", Tensor(DType::kF32, {1})}}, {});
  ProcessResult r = rlx({"train", "--model", not_loss.string(), "--data", data_.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("is not a loss"));
}

// --task causal-lm on the qwen3-tiny fixture. The first step's loss is the mean next-token
// cross-entropy of the reference's own logits (transformers, float64) for the same prompts; then
// a sequence repeated in every batch is learnt, and the saved folder reloads and continues it.
TEST_F(TrainCliTest, CausalLmFineTuningLearnsASequenceAndTheFolderReloads) {
  const fs::path model = fs::path(RLX_FIXTURES_DIR) / "qwen3-tiny";
  TensorMap ref = read_safetensors(model / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");  // i64 [4, 12]
  const Tensor& logits = ref.at("prompt_logits_f64");  // f64 [4, 12, V]
  const int64_t rows = prompts.shape()[0], seq = prompts.shape()[1], vocab = logits.shape()[2];
  double want = 0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t t = 0; t + 1 < seq; ++t) {
      const double* z = logits.as<double>() + (b * seq + t) * vocab;
      const double top = *std::max_element(z, z + vocab);
      double sum = 0;
      for (int64_t v = 0; v < vocab; ++v) sum += std::exp(z[v] - top);
      want += top + std::log(sum) - z[prompts.as<int64_t>()[b * seq + t + 1]];
    }
  want /= static_cast<double>(rows * (seq - 1));
  const fs::path data = dir_ / "prompts.safetensors";
  write_safetensors(data, {{"input_ids", prompts}}, {});
  ProcessResult r = rlx({"train", "--model", model.string(), "--task", "causal-lm", "--data", data.string(),
                         "--batch", std::to_string(rows), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_NEAR(parse_json(r).find("first_loss")->as_number()->value, want, 1e-4 * want);
  // Two data-parallel ranks with two prompts each follow one process over three steps: the loss
  // is a mean over equal shares of tokens, so the ranks' mean is the whole batch's.
  auto fine_tune = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"train", "--model", model.string(), "--task", "causal-lm",
                                     "--data", data.string(), "--batch", std::to_string(rows),
                                     "--epochs", "3", "--collective-timeout", "60"};
    args.insert(args.end(), more.begin(), more.end());
    return epoch_losses(args);
  };
  const std::vector<double> one = fine_tune({}), two = fine_tune({"--nproc", "2"});
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(two.size(), 3u);
  for (size_t e = 0; e < 3; ++e) EXPECT_NEAR(two[e], one[e], 1e-4 * one[e]) << "step " << e + 1;

  const std::vector<int64_t> sequence = {1742, 1304, 1046, 552, 630, 83, 154, 33,
                                         358, 1665, 1330, 1869, 1031, 1242, 1988, 1494};
  Tensor repeated(DType::kI64, {8, 16});
  for (int64_t i = 0; i < 8; ++i) std::copy(sequence.begin(), sequence.end(), repeated.as<int64_t>() + i * 16);
  const fs::path tokens = dir_ / "tokens.safetensors", out = dir_ / "tuned";
  write_safetensors(tokens, {{"input_ids", repeated}}, {});
  r = rlx({"train", "--model", model.string(), "--task", "causal-lm", "--data", tokens.string(), "--batch", "4",
           "--epochs", "20", "--optimizer", "adamw:lr=0.01", "--save", out.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  EXPECT_LT(doc.find("last_loss")->as_number()->value, 0.01 * doc.find("first_loss")->as_number()->value) << r.out;
  r = rlx({"generate", out.string(), "--prompt-ids", "1742,1304,1046,552", "--max-new-tokens", "12",
           "--ignore-eos", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  std::vector<int64_t> got;
  const json::Value generated = parse_json(r);
  for (const json::Value& t : *generated.find("tokens")->as_array()) got.push_back(*t.as_number()->as_i64());
  EXPECT_EQ(got, std::vector<int64_t>(sequence.begin() + 4, sequence.end()));
  // The original folder is untouched, and refused as the place to save.
  r = rlx({"train", "--model", model.string(), "--task", "causal-lm", "--data", tokens.string(), "--batch", "4",
           "--save", model.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("is the model's own folder"));
  // A token id beyond the vocabulary, and an encoder (no logits), are refused by name.
  Tensor bad(DType::kI64, {8, 16});
  std::copy(repeated.as<int64_t>(), repeated.as<int64_t>() + 128, bad.as<int64_t>());
  bad.as<int64_t>()[3 * 16 + 5] = 5000;
  write_safetensors(tokens, {{"input_ids", bad}}, {});
  r = rlx({"train", "--model", model.string(), "--task", "causal-lm", "--data", tokens.string(), "--batch", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("input_ids[3, 5] = 5000 is not a token id"));
  r = rlx({"train", "--model", (fs::path(RLX_FIXTURES_DIR) / "minilm-l2-f16").string(), "--task", "causal-lm",
           "--data", data.string(), "--batch", "4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("has no graph from input_ids to logits"));
}

// --task sequence-classification on the 2-layer MiniLM fixture (widened to f32: it is stored in
// f16). Each sequence's class is which of two tokens stands second; the head (pooler and
// classifier, as BertForSequenceClassification has them) is added, trained with the encoder, and
// saved; the folder then loads with a `logits` output that a hand computation from its
// last_hidden_state and saved head reproduces, classifies every sequence, and trains on.
TEST_F(TrainCliTest, SequenceClassificationLearnsTheClassAndTheFolderReloadsWithLogits) {
  const fs::path fixture = fs::path(RLX_FIXTURES_DIR) / "minilm-l2-f16",
                 model = dir_ / "minilm-f32";
  fs::create_directories(model);
  fs::copy_file(fixture / "config.json", model / "config.json");
  TensorMap wide;
  for (auto& [name, t] : read_safetensors(fixture / "model.safetensors")) {
    if (t.dtype() != DType::kF16) {
      wide.emplace(name, t);
      continue;
    }
    Tensor f(DType::kF32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) f.as<float>()[i] = f16_to_f32(t.as<uint16_t>()[i]);
    wide.emplace(name, std::move(f));
  }
  write_safetensors(model / "model.safetensors", wide, {});
  const int64_t rows = 32, seq = 8;
  Tensor ids(DType::kI64, {rows, seq}), labels(DType::kI64, {rows});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> word(10, 899);
  for (int64_t r = 0; r < rows; ++r) {
    labels.as<int64_t>()[r] = r % 2;
    for (int64_t t = 0; t < seq; ++t) ids.as<int64_t>()[r * seq + t] = word(rng);
    ids.as<int64_t>()[r * seq] = 2, ids.as<int64_t>()[r * seq + seq - 1] = 3;
    ids.as<int64_t>()[r * seq + 1] = r % 2 ? 900 : 901;
  }
  const fs::path data = dir_ / "labelled.safetensors", out = dir_ / "classifier";
  write_safetensors(data, {{"input_ids", ids}, {"labels", labels}}, {});
  ProcessResult r =
      rlx({"train", "--model", model.string(), "--task", "sequence-classification", "--data",
           data.string(), "--batch", "8", "--epochs", "6", "--optimizer", "adamw:lr=0.0001",
           "--save", out.string(), "--eval-data", data.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = parse_json(r);
  EXPECT_EQ(doc.find("labels")->as_number()->value, 2);
  // The new classifier starts near zero: the first loss is about log 2.
  EXPECT_NEAR(doc.find("first_loss")->as_number()->value, std::log(2.0), 0.1) << r.out;
  const json::Array& losses = *doc.find("epoch_losses")->as_array();
  EXPECT_LT(losses.back().as_number()->value, 0.1 * losses.front().as_number()->value) << r.out;
  const json::Value config = json::parse(read_text(out / "config.json"));
  EXPECT_EQ(*(*config.find("architectures")->as_array())[0].as_string(),
            "BertForSequenceClassification");
  EXPECT_EQ(config.find("id2label")->as_object()->size(), 2u);

  Tensor ones(DType::kI64, {rows, seq}), zeros(DType::kI64, {rows, seq});
  std::fill(ones.as<int64_t>(), ones.as<int64_t>() + ones.numel(), 1);
  std::fill(zeros.as<int64_t>(), zeros.as<int64_t>() + zeros.numel(), 0);
  const fs::path in = dir_ / "in.safetensors", outputs = dir_ / "outputs.safetensors";
  write_safetensors(in, {{"input_ids", ids}, {"attention_mask", ones}, {"token_type_ids", zeros}},
                    {});
  r = rlx({"run", out.string(), "--inputs", in.string(), "-o", outputs.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  TensorMap got = read_safetensors(outputs), head = read_safetensors(out / "model.safetensors");
  const Tensor &logits = got.at("logits"), &hidden = got.at("last_hidden_state");
  ASSERT_EQ(logits.shape(), (std::vector<int64_t>{rows, 2}));
  const int64_t H = hidden.shape()[2];
  const float *pw = head.at("pooler.dense.weight").as<float>(),
              *pb = head.at("pooler.dense.bias").as<float>(),
              *cw = head.at("classifier.weight").as<float>(),
              *cb = head.at("classifier.bias").as<float>();
  int right = 0;
  double cross_entropy = 0;
  for (int64_t b = 0; b < rows; ++b) {
    const float* h0 = hidden.as<float>() + b * seq * H;  // the first token's state
    std::vector<double> pooled(H);
    for (int64_t i = 0; i < H; ++i) {
      double z = pb[i];
      for (int64_t j = 0; j < H; ++j) z += static_cast<double>(pw[i * H + j]) * h0[j];
      pooled[i] = std::tanh(z);
    }
    for (int64_t c = 0; c < 2; ++c) {
      double z = cb[c];
      for (int64_t i = 0; i < H; ++i) z += static_cast<double>(cw[c * H + i]) * pooled[i];
      EXPECT_NEAR(logits.as<float>()[b * 2 + c], z, 1e-4) << b << "," << c;
    }
    const float* z = logits.as<float>() + b * 2;
    const int64_t predicted = z[1] > z[0] ? 1 : 0;
    right += predicted == labels.as<int64_t>()[b];
    const double top = std::max(z[0], z[1]);
    cross_entropy +=
        top + std::log(std::exp(z[0] - top) + std::exp(z[1] - top)) - z[labels.as<int64_t>()[b]];
  }
  EXPECT_EQ(right, rows);
  // --eval-data (here the training sequences themselves) reports what the saved folder gives.
  EXPECT_EQ(doc.find("eval_accuracy")->as_number()->value, 1.0);
  EXPECT_NEAR(doc.find("eval_loss")->as_number()->value, cross_entropy / rows, 1e-4) << r.out;

  // Two data-parallel ranks, and two pipeline stages, follow one process over two epochs.
  auto two_epochs = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {"train",
                                     "--model",
                                     model.string(),
                                     "--task",
                                     "sequence-classification",
                                     "--data",
                                     data.string(),
                                     "--batch",
                                     "8",
                                     "--epochs",
                                     "2",
                                     "--optimizer",
                                     "adamw:lr=0.0001",
                                     "--collective-timeout",
                                     "60"};
    args.insert(args.end(), more.begin(), more.end());
    return epoch_losses(args);
  };
  const std::vector<double> one = two_epochs({}), ranks = two_epochs({"--nproc", "2"}),
                            stages = two_epochs({"--pp", "2"});
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(ranks.size(), 2u);
  ASSERT_EQ(stages.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(ranks[e], one[e], 1e-5 * one[e]) << "epoch " << e + 1;
    EXPECT_NEAR(stages[e], one[e], 1e-5 * one[e]) << "epoch " << e + 1;
  }

  // The saved folder trains on with its own head (its logits output), from where it stopped.
  r = rlx({"train", "--model", out.string(), "--task", "sequence-classification", "--data",
           data.string(), "--batch", "8", "--optimizer", "adamw:lr=0.0001", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_LT(parse_json(r).find("first_loss")->as_number()->value, 0.1) << r.out;

  // A label beyond the folder's classes, data without labels, and a decoder are refused by name.
  labels.as<int64_t>()[3] = 5;
  write_safetensors(data, {{"input_ids", ids}, {"labels", labels}}, {});
  r = rlx({"train", "--model", out.string(), "--task", "sequence-classification", "--data",
           data.string(), "--batch", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("labels[3] = 5 is not a class"));
  write_safetensors(data, {{"input_ids", ids}}, {});
  r = rlx({"train", "--model", model.string(), "--task", "sequence-classification", "--data",
           data.string(), "--batch", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("no labels i64 [32] tensor"));
  r = rlx({"train", "--model", (fs::path(RLX_FIXTURES_DIR) / "qwen3-tiny").string(), "--task",
           "sequence-classification", "--data", data.string(), "--batch", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("has no graph from input_ids to last_hidden_state"));
  // The fixture as stored (f16): refused with the reason, not trained into NaN.
  write_safetensors(
      data,
      {{"input_ids", ids},
       {"labels", Tensor::from<int64_t>(DType::kI64, {rows}, std::vector<int64_t>(rows, 1))}},
      {});
  r = rlx({"train", "--model", fixture.string(), "--task", "sequence-classification", "--data",
           data.string(), "--batch", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(
      r.err,
      HasSubstr("word_embeddings.weight is f16[1000,384]; the optimizers update f32 and f64"));
  r = rlx({"train", "--model", "mlp:784,16,10", "--data", "synthetic:256", "--eval-data",
           data.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("only --task sequence-classification evaluates"));
}

TEST_F(TrainCliTest, ErrorsSayWhatIsWrong) {
  ProcessResult r = rlx({"train", "--model", "mlp:100,10", "--data", "synthetic:64", "--batch", "8"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("the input size is 100 but the images of synthetic:64 have 784 pixels"));
  r = rlx({"train", "--model", "mlp:784,10", "--data", (dir_ / "nowhere").string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("not a folder"));
  fs::create_directories(dir_ / "empty");
  r = rlx({"train", "--model", "mlp:784,10", "--data", (dir_ / "empty").string()});
  EXPECT_THAT(r.err, HasSubstr("train-images-idx3-ubyte"));
  r = rlx({"train", "--model", "mlp:784,10", "--data", "synthetic:64", "--optimizer", "sgd:lr=x"});
  EXPECT_THAT(r.err, HasSubstr("lr=x is not a number"));
  r = rlx({"train", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--optimizer"));
}

}  // namespace
}  // namespace rlx::cli
