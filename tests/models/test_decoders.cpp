// qwen3-tiny and llama-tiny (random weights, transformers float64 references): prompt logits
// from "main", and greedy tokens from the KV-cache loop of `rlx generate` (prefill + decode).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "model_support.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "rlx/llm/decoding.h"
#include "test_support.h"

namespace rlx::test {
namespace {

class DecoderParity : public ::testing::TestWithParam<const char*> {};

// A NaN among the logits is an error, not token 0 (every comparison with NaN is false).
TEST(GreedyDecoding, NanLogitsAreAnErrorNotTokenZero) {
  Tensor logits = Tensor::from<float>(DType::kF32, {1, 2, 3}, {0, 1, 2, 5, std::nanf(""), 4});
  EXPECT_EQ(llm::argmax_last(Tensor::from<float>(DType::kF32, {1, 1, 3}, {1, 7, 2}), 0), 1);
  try {
    llm::argmax_last(logits, 0);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("logits are NaN"), std::string::npos) << e.what();
  }
}

TEST_P(DecoderParity, PromptLogitsMatchFloat64Reference) {
  RLX_FIXTURE(dir, GetParam());
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = load_model(dir);
  Session session(cpu_target());
  CompiledModel main = session.compile(model.graph("main"));
  NamedTensors out = main.run({{"input_ids", ref.at("prompts")}});
  const Tensor& logits = out.at("logits");
  ASSERT_EQ(logits.shape(), ref.at("prompt_logits_f64").shape());
  double err = max_abs_diff(logits, ref.at("prompt_logits_f64"));
  // Measured on cpu (2026-12): qwen3-tiny 4.2e-6, llama-tiny 3.5e-6; the bound is about 10x.
  constexpr double kBound = 5e-5;
  std::printf("%s: prompt logits %s, max abs error %.3g (limit %g)\n", GetParam(),
              logits.shape_str().c_str(), err, kBound);
  EXPECT_LE(err, kBound);
}

TEST_P(DecoderParity, GreedyTokensWithKvCacheMatchReference) {
  RLX_FIXTURE(dir, GetParam());
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");
  const Tensor& expected = ref.at("greedy_tokens");
  const int64_t rows = expected.shape()[0], steps = expected.shape()[1];
  Model model = load_model(dir);
  llm::GreedyDecoder decoder(model, cpu_target());
  llm::DecodeOptions options;
  options.max_new_tokens = steps;  // no stop ids: the reference ran every step
  llm::DecodeResult r = decoder.run(prompts, options);
  std::printf("%s: %lld prompts x %lld tokens; prefill %.3fs, %lld decode steps %.3fs\n",
              GetParam(), static_cast<long long>(rows), static_cast<long long>(steps),
              r.prefill_seconds, static_cast<long long>(r.decode_steps), r.decode_seconds);
  ASSERT_EQ(static_cast<int64_t>(r.tokens.size()), rows);
  // Prefill gives the first token and each decode step one more; the first step (which
  // specialises the decode graph) is timed apart from the steady state.
  if (steps >= 2) {
    EXPECT_GT(r.first_step_seconds, 0.0);
    EXPECT_EQ(r.decode_steps, steps - 2);
  }
  // The cache has masked slots past what the prompt and the new tokens need (a whole number of
  // capacity steps), and the tokens still match.
  EXPECT_EQ(r.cache_capacity % llm::kCapacityStep, 0);
  EXPECT_GE(r.cache_capacity, prompts.shape()[1] + steps);
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int64_t> want(expected.as<int64_t>() + i * steps,
                              expected.as<int64_t>() + (i + 1) * steps);
    EXPECT_EQ(r.tokens[i], want) << "prompt " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DecoderParity, ::testing::Values("qwen3-tiny", "llama-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace rlx::test
