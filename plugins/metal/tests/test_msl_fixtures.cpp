// The model fixtures on the metal target with the C++ stand-in device, held to the bounds the
// GPU-like targets meet (vulkan, opengl and webgpu in tests/models/target_fixtures.cpp, which gives
// a target it has not measured looser ones) and compared with the cpu target output by output:
// minilm-l2-f16's hidden states and sentence embeddings, bert-tiny-onnx against ONNX Runtime, and
// qwen3-tiny's prompt logits against float64. The shared fixture tests (qwen3-tiny's greedy tokens
// and the precision policies) run beside these (msl_suite_main.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "model_support.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {
namespace {

// vulkan's, opengl's and webgpu's bounds (about 10x what they measured here).
constexpr double kMiniLmHidden = 7e-5;        // last_hidden_state max abs error vs float64
constexpr double kMiniLmOneMinusCos = 3e-13;  // 1 - min cosine of the sentence embeddings
constexpr double kBertVsOrt = 3e-5;           // bert-tiny-onnx max abs error vs ONNX Runtime
constexpr double kPromptLogits = 1e-4;  // llama-tiny's bound on every target, here qwen3-tiny's
// metal against cpu, output by output: both compute in f32, the order of the sums in products and
// reductions differs (measured 6.2e-6 on minilm, 2.4e-6 on bert, 3.7e-6 on qwen3-tiny).
constexpr double kAgainstCpu = 6e-5;

NamedTensors run_model(const Graph& graph, const NamedTensors& inputs, const std::string& target) {
  Session session(target_named(target));
  return session.compile(graph).run(inputs);
}

TEST(MslOnCpuFixtures, MiniLmEmbeddingsMeetTheGpuBoundsAndAgreeWithCpu) {
  RLX_FIXTURE(dir, "minilm-l2-f16");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = load_model(dir);
  const NamedTensors in{{"input_ids", ref.at("input_ids")},
                        {"attention_mask", ref.at("attention_mask")},
                        {"token_type_ids", ref.at("token_type_ids")}};
  NamedTensors got = run_model(model.graph("main"), in, "metal");
  NamedTensors cpu = run_model(model.graph("main"), in, "cpu");
  const Tensor& emb = got.at("sentence_embedding");
  ASSERT_EQ(emb.shape(), ref.at("sentence_embedding_f64").shape());
  double worst = 1;
  for (int64_t r = 0; r < emb.shape()[0]; ++r)
    worst = std::min(worst, cosine(emb, ref.at("sentence_embedding_f64"), r, emb.shape()[1]));
  const double hidden = max_abs_diff(got.at("last_hidden_state"), ref.at("last_hidden_state_f64"));
  const double vs_cpu = max_abs_diff(got.at("last_hidden_state"), cpu.at("last_hidden_state"));
  std::printf(
      "minilm-l2-f16 on metal (on cpu): 1 - min cosine %.3g, hidden error %.3g, vs cpu %.3g\n",
      1 - worst, hidden, vs_cpu);
  EXPECT_LE(1 - worst, kMiniLmOneMinusCos);
  EXPECT_LE(hidden, kMiniLmHidden);
  EXPECT_LE(vs_cpu, kAgainstCpu);
}

TEST(MslOnCpuFixtures, BertTinyOnnxMeetsTheGpuBoundAndAgreesWithCpu) {
  RLX_FIXTURE(dir, "bert-tiny-onnx");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = load_model(dir / "model.onnx");
  const NamedTensors in{{"input_ids", ref.at("input_ids")},
                        {"attention_mask", ref.at("attention_mask")},
                        {"token_type_ids", ref.at("token_type_ids")}};
  NamedTensors got = run_model(model.graph(), in, "metal");
  NamedTensors cpu = run_model(model.graph(), in, "cpu");
  const double vs_ort = max_abs_diff(got.at("last_hidden_state"), ref.at("last_hidden_state_ort"));
  const double vs_cpu = max_abs_diff(got.at("last_hidden_state"), cpu.at("last_hidden_state"));
  std::printf("bert-tiny-onnx on metal (on cpu): error vs ONNX Runtime %.3g, vs cpu %.3g\n", vs_ort,
              vs_cpu);
  EXPECT_LE(vs_ort, kBertVsOrt);
  EXPECT_LE(vs_cpu, kAgainstCpu);
}

TEST(MslOnCpuFixtures, Qwen3TinyPromptLogitsMeetTheBoundAndAgreeWithCpu) {
  RLX_FIXTURE(dir, "qwen3-tiny");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = load_model(dir);
  const NamedTensors in{{"input_ids", ref.at("prompts")}};
  NamedTensors got = run_model(model.graph("main"), in, "metal");
  NamedTensors cpu = run_model(model.graph("main"), in, "cpu");
  const double vs_f64 = max_abs_diff(got.at("logits"), ref.at("prompt_logits_f64"));
  const double vs_cpu = max_abs_diff(got.at("logits"), cpu.at("logits"));
  std::printf("qwen3-tiny on metal (on cpu): prompt logits error vs float64 %.3g, vs cpu %.3g\n",
              vs_f64, vs_cpu);
  EXPECT_LE(vs_f64, kPromptLogits);
  EXPECT_LE(vs_cpu, kAgainstCpu);
}

}  // namespace
}  // namespace rlx::test
