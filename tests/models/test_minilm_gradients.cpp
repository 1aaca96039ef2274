// The gradients of the minilm-l2-f16 fixture's whole encoder, taken by rlx's reverse-mode
// autodiff on MIR and run on the cpu in f32, against PyTorch autograd in float64
// (tests/unit/autodiff/minilm_grad_reference.py, whose forward pass reproduces transformers'
// reference to 4e-15; its output minilm_grads_torch.json). The loss is sum(last_hidden_state * R)
// with R[i] = sin(0.3 i); each of the 37 weights is compared through its gradient's norm and its
// dot products with three fixed directions, which any wrong element would move.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model_support.h"
#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/fused_weights.h"
#include "rlx/core/json.h"
#include "rlx/core/passes.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {
namespace {

Tensor widened(const Tensor& t) {
  Tensor out(DType::kF32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.as<float>()[i] = static_cast<float>(t.scalar_at(i));
  return out;
}

TEST(MiniLmGradients, MatchPyTorchAutogradInFloat64) {
  RLX_FIXTURE(dir, "minilm-l2-f16");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  std::ifstream in(RLX_MINILM_GRADS);
  ASSERT_TRUE(in) << RLX_MINILM_GRADS;
  const json::Value torch = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  const Tensor& ids = ref.at("input_ids");
  Model model = load_model(dir);
  const Graph main = specialize(model.graph("main"), {{"B", ids.shape()[0]}, {"S", ids.shape()[1]}});

  // The same graph with its f16 weights widened to f32 params (exactly), rebuilt node by node so
  // every type is inferred again, ending in the loss.
  Graph g;
  GraphBuilder b(g);
  std::vector<ValueId> map(main.values.size(), kNoValue);
  for (ValueId v : main.inputs) map[v] = b.input(main.values[v].name, main.type(v));
  for (ValueId v : main.params) {
    const std::string& name = main.values[v].name;
    map[v] = g.add_param(name, {DType::kF32, main.type(v).shape});
    g.weights[name] = widened(main.weights.at(name));
  }
  for (const Node& n : main.nodes) {
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(map[v]);
    std::vector<ValueId> outs = b.op_n(n.op, ins, n.attrs);
    for (size_t k = 0; k < outs.size(); ++k) map[n.outputs[k]] = outs[k];
  }
  const ValueId hidden = map[*main.find_value("last_hidden_state")];
  const TensorType ht = g.type(hidden);
  Tensor r(DType::kF32, {ht.shape[0].value, ht.shape[1].value, ht.shape[2].value});
  for (int64_t i = 0; i < r.numel(); ++i) r.as<float>()[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i)));
  const ValueId loss = b.reduce(b.mul(hidden, b.constant(r)), {0, 1, 2}, ReduceKind::kSum);
  g.values[loss].name = "loss";
  g.outputs = {loss};

  Graph mir = decompose_to_mir(g);
  std::vector<ValueId> wrt = mir.params;
  std::vector<ValueId> grads = append_gradients(mir, *mir.find_value("loss"), wrt);
  for (size_t k = 0; k < grads.size(); ++k) {
    mir.values[grads[k]].name = "grad." + mir.values[wrt[k]].name;
    mir.outputs.push_back(grads[k]);
  }
  Session session(cpu_target());
  NamedTensors out = session.compile(mir).run({{"input_ids", ids},
                                               {"attention_mask", ref.at("attention_mask")},
                                               {"token_type_ids", ref.at("token_type_ids")}});
  const double want_loss = torch.find("loss")->as_number()->value;
  EXPECT_NEAR(out.at("loss").scalar_at(0), want_loss, 1e-5 * std::abs(want_loss));

  const json::Value* tensors = torch.find("tensors");
  ASSERT_NE(tensors, nullptr);
  // The key biases' gradients are zero (a constant added to a row of scores leaves its softmax
  // unchanged): PyTorch's are 1e-14, rlx's f32 rounding of the cancelling terms; such tensors are
  // held to zero at f32 rounding of the largest gradient instead of a relative bound.
  double scale = 0;
  for (const auto& member : *tensors->as_object())
    scale = std::max(scale, member.second.find("norm")->as_number()->value);
  int compared = 0;
  double worst = 0;  // largest relative error of a norm or a dot product (in units of the norm)
  // The builder multiplies q, k and v as one product over their rows put together: that param's
  // gradient holds the three checkpoint tensors' gradients one after another, equal in size.
  struct Part {
    std::string name;
    const Tensor* grad;
    int64_t begin, count;
  };
  std::vector<Part> parts;
  for (ValueId p : wrt) {
    const Tensor& grad = out.at("grad." + mir.values[p].name);
    const std::vector<std::string> names = fused_weight_parts(mir.values[p].name);
    const int64_t count = grad.numel() / static_cast<int64_t>(names.size());
    ASSERT_EQ(count * static_cast<int64_t>(names.size()), grad.numel()) << mir.values[p].name;
    for (size_t k = 0; k < names.size(); ++k)
      parts.push_back({names[k], &grad, static_cast<int64_t>(k) * count, count});
  }
  for (const Part& part : parts) {
    const std::string& name = part.name;
    const json::Value* t = tensors->find(name);
    ASSERT_NE(t, nullptr) << name << " is not in the PyTorch reference";
    double norm = 0, dots[3] = {0, 0, 0}, dnorm[3] = {0, 0, 0};
    for (int64_t i = 0; i < part.count; ++i) {
      const double v = part.grad->scalar_at(part.begin + i);
      norm += v * v;
      for (int k = 0; k < 3; ++k) {
        const double d = std::sin(0.37 * static_cast<double>(i) + 1.3 * k + 0.1);
        dots[k] += v * d, dnorm[k] += d * d;
      }
    }
    norm = std::sqrt(norm);
    const double want_norm = t->find("norm")->as_number()->value;
    ++compared;
    if (want_norm < 1e-9 * scale) {
      EXPECT_LT(norm, 1e-6 * scale) << name << ": a zero gradient";
      continue;
    }
    EXPECT_NEAR(norm, want_norm, 1e-4 * want_norm) << name;
    worst = std::max(worst, std::abs(norm - want_norm) / want_norm);
    for (int k = 0; k < 3; ++k) {
      const double want = (*t->find("dots")->as_array())[k].as_number()->value;
      EXPECT_NEAR(dots[k], want, 1e-4 * want_norm * std::sqrt(dnorm[k])) << name << " direction " << k;
      worst = std::max(worst, std::abs(dots[k] - want) / (want_norm * std::sqrt(dnorm[k])));
    }
  }
  EXPECT_EQ(compared, 37);
  std::printf("minilm-l2-f16 gradients of 37 weights vs PyTorch float64: worst relative error %.3g\n", worst);
}

}  // namespace
}  // namespace rlx::test
