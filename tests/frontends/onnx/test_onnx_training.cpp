// An ONNX model that ends in its loss (MatMul, Add, SoftmaxCrossEntropyLoss) trained by rlx,
// through the C++ Trainer and as a file given to `rlx train --model`: the first loss and the
// weights after one SGD step against the softmax classifier's gradient computed here in double,
// then training that separates the classes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx_model_maker.h"
#include "rlx/core/json.h"
#include "rlx/core/optimizers.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx {
namespace {

using ::onnx::TensorProto;

constexpr int64_t kN = 32, kIn = 4, kClasses = 16;

// logits = x W + b; loss = SoftmaxCrossEntropyLoss(logits, labels), mean. W (64 elements) is an
// initializer the importer keeps as a param, so it trains; b (16) becomes a constant.
test::ModelMaker classifier(const std::vector<float>& w, const std::vector<float>& bias) {
  test::ModelMaker mm;
  mm.input("x", TensorProto::FLOAT, {"N", std::to_string(kIn)});  // a symbolic batch, as exported
  mm.input("labels", TensorProto::INT64, {"N"});
  mm.init_f32("W", {kIn, kClasses}, w);
  mm.init_f32("b", {kClasses}, bias);
  mm.node("MatMul", {"x", "W"}, {"xw"});
  mm.node("Add", {"xw", "b"}, {"logits"});
  mm.node("SoftmaxCrossEntropyLoss", {"logits", "labels"}, {"loss"});
  mm.output("loss");
  return mm;
}

struct Batch {
  std::vector<float> x;
  std::vector<int64_t> labels;
};

// Class k's points lie around the k-th corner pattern of the four inputs: separable.
Batch batch(uint32_t seed) {
  Batch b;
  uint32_t s = seed;
  auto uniform = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  };
  for (int64_t i = 0; i < kN; ++i) {
    const int64_t k = i % kClasses;
    b.labels.push_back(k);
    for (int64_t j = 0; j < kIn; ++j) b.x.push_back(((k >> j) & 1 ? 1.0f : -1.0f) + 0.3f * uniform());
  }
  return b;
}

NamedTensors feed(const Batch& b) {
  return {{"x", Tensor::from<float>(DType::kF32, {kN, kIn}, b.x)},
          {"labels", Tensor::from<int64_t>(DType::kI64, {kN}, b.labels)}};
}

// The reference in double: p = softmax(x W + b), loss = mean(-log p[label]),
// dL/dW = x^T (p - onehot) / N.
struct Reference {
  double loss = 0;
  std::vector<double> grad;
};
Reference reference(const std::vector<float>& w, const std::vector<float>& bias, const Batch& b) {
  Reference r;
  double& loss = r.loss;
  std::vector<double>& grad = r.grad;
  grad.assign(w.size(), 0.0);
  for (int64_t i = 0; i < kN; ++i) {
    std::vector<double> z(kClasses);
    double top = -1e300, sum = 0;
    for (int64_t c = 0; c < kClasses; ++c) {
      z[c] = bias[c];
      for (int64_t j = 0; j < kIn; ++j) z[c] += static_cast<double>(b.x[i * kIn + j]) * w[j * kClasses + c];
      top = std::max(top, z[c]);
    }
    for (double v : z) sum += std::exp(v - top);
    loss += top + std::log(sum) - z[b.labels[i]];
    for (int64_t c = 0; c < kClasses; ++c) {
      const double delta = std::exp(z[c] - top) / sum - (c == b.labels[i] ? 1.0 : 0.0);
      for (int64_t j = 0; j < kIn; ++j) grad[j * kClasses + c] += b.x[i * kIn + j] * delta / kN;
    }
  }
  loss /= kN;
  return r;
}

void initial(std::vector<float>& w, std::vector<float>& bias) {
  w.resize(kIn * kClasses), bias.resize(kClasses);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>((i * 7) % 11) - 0.25f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i);
}

TEST(OnnxTraining, AClassifierEndingInSoftmaxCrossEntropyLossTrains) {
  std::vector<float> w, bias;
  initial(w, bias);
  Graph g = classifier(w, bias).import().graph();
  ASSERT_EQ(g.params.size(), 1u) << "W trains, b is a constant";
  const double lr = 0.5;
  Trainer trainer(test::cpu_target(), g, parse_optimizer("sgd:lr=0.5"));
  const Batch b = batch(7);
  const Reference ref = reference(w, bias, b);
  const double loss = ref.loss;
  const std::vector<double>& grad = ref.grad;
  EXPECT_NEAR(trainer.step(feed(b)), loss, 1e-5 * loss);
  const Tensor& after = trainer.parameters().at("W");
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(after.as<float>()[i], w[i] - lr * grad[i], 1e-5) << "W[" << i << "]";

  // Chance is ln 16 = 2.77; the classes are separable, so the loss keeps falling.
  double last = 0;
  for (int s = 0; s < 100; ++s) last = trainer.step(feed(batch(100 + s)));
  EXPECT_LT(last, 0.2 * loss);
}

// The same model as a .onnx file through `rlx train --model FILE --data FILE`: one batch an
// epoch, so the first epoch's loss is the first step's and --save holds the weights after it.
TEST(OnnxTraining, RlxTrainTakesTheOnnxFile) {
  std::vector<float> w, bias;
  initial(w, bias);
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "rlx_onnx_train";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "classifier.onnx", std::ios::binary)
      << classifier(w, bias).m.SerializeAsString();
  const Batch b = batch(7);
  const NamedTensors data = feed(b);
  write_safetensors(dir / "data.safetensors", TensorMap(data.begin(), data.end()), {});
  auto train = [&](int epochs, const std::string& save) {
    const std::string cmd = std::string(RLX_BINARY) + " train --model " +
                            (dir / "classifier.onnx").string() + " --data " +
                            (dir / "data.safetensors").string() + " --batch 32 --epochs " +
                            std::to_string(epochs) + " --optimizer sgd:lr=0.5 -q --json" +
                            (save.empty() ? "" : " --save " + save) + " 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
      EXPECT_EQ(pclose(p), 0) << out;
    }
    std::vector<double> losses;
    try {
      const json::Value doc = json::parse(out);  // kept: the loop below reads inside it
      for (const json::Value& v : *doc.find("epoch_losses")->as_array())
        losses.push_back(v.as_number()->value);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << ": " << out;
    }
    return losses;
  };
  const Reference ref = reference(w, bias, b);
  const std::string saved = (dir / "after.safetensors").string();
  const std::vector<double> one = train(1, saved);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NEAR(one[0], ref.loss, 1e-5 * ref.loss);
  const Tensor after = read_safetensors(saved).at("W");
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(after.as<float>()[i], w[i] - 0.5 * ref.grad[i], 1e-5) << "W[" << i << "]";
  const std::vector<double> many = train(100, "");  // the same batch 100 times
  ASSERT_EQ(many.size(), 100u);
  EXPECT_LT(many.back(), 0.2 * ref.loss);
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlx
