// qwen3-tiny and llama-tiny (random weights, transformers float64 references): prompt logits
// from "main", and greedy tokens from the KV-cache loop of `rlx generate` (prefill + decode).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model_support.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
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

// The rewrite behind --kv-cache: the cache inputs, the scatters into them and the outputs they
// become change dtype, each new row is converted before it is stored, Attention reads the cache
// as stored, and any other reader of the cache reads it converted back to the dtype it read.
TEST(KvCacheDtype, RewritesTheCacheAndNothingElse) {
  const char* text =
      R"(graph @decode(%q: f32[1,2,1,4], %position: i64[1], %k: f32[1,1,1,4], %past_key.0: f32[1,1,8,4], %past_value.0: f32[1,1,8,4]) {
  %kc = scatter(%past_key.0, %position, %k) {axis = 2, reduce = "none"} : f32[1,1,8,4]
  %vc = scatter(%past_value.0, %position, %k) {axis = 2, reduce = "none"} : f32[1,1,8,4]
  %a = Attention(%q, %kc, %vc) {mask = "causal"} : f32[1,2,1,4]
  %s = reduce_sum(%vc) {axes = [2]} : f32[1,1,4]
  return %a, %s, %kc, %vc
}
)";
  const Graph plain = parse_graph(text, "decode.rlx");
  Graph same = plain;
  EXPECT_EQ(llm::set_kv_cache_dtype(same, DType::kF32), 2);
  EXPECT_EQ(print_graph(same), print_graph(plain));  // the dtype it has: nothing to do

  Graph g = plain;
  ASSERT_EQ(llm::set_kv_cache_dtype(g, DType::kF16), 2);
  auto type_of = [&](const std::string& name) { return g.type(*g.find_value(name)).str(); };
  EXPECT_EQ(type_of("past_key.0"), "f16[1,1,8,4]");
  EXPECT_EQ(type_of("past_value.0"), "f16[1,1,8,4]");
  EXPECT_EQ(type_of("kc"), "f16[1,1,8,4]");
  EXPECT_EQ(type_of("vc"), "f16[1,1,8,4]");
  EXPECT_EQ(type_of("a"), "f32[1,2,1,4]");
  EXPECT_EQ(type_of("s"), "f32[1,1,4]");
  auto producer = [&](const std::string& name) -> const Node& {
    return g.nodes.at(g.values[*g.find_value(name)].producer);
  };
  auto name_of = [&](ValueId v) { return g.values[v].name; };
  for (const char* cache : {"kc", "vc"}) {
    const Node& scatter = producer(cache);
    const Node& row = g.nodes.at(g.values[scatter.inputs[2]].producer);
    EXPECT_EQ(row.op, "convert") << cache;
    EXPECT_EQ(name_of(row.inputs[0]), "k") << cache;
  }
  const Node& attention = producer("a");
  EXPECT_EQ(name_of(attention.inputs[1]), "kc");
  EXPECT_EQ(name_of(attention.inputs[2]), "vc");
  const Node& back = g.nodes.at(g.values[producer("s").inputs[0]].producer);
  EXPECT_EQ(back.op, "convert");
  EXPECT_EQ(name_of(back.inputs[0]), "vc");
  EXPECT_EQ(g.type(back.outputs[0]).dtype, DType::kF32);

  // Both run, and agree to f16's rounding of the cache.
  NamedTensors in{{"q", f32({1, 2, 1, 4}, {1, -2, 3, 0.5f, 2, 1, -1, 0.25f})},
                  {"position", Tensor::from<int64_t>(DType::kI64, {1}, {2})},
                  {"k", f32({1, 1, 1, 4}, {0.1f, 0.2f, -0.3f, 0.4f})}};
  std::vector<float> past(32);
  for (size_t i = 0; i < past.size(); ++i) past[i] = 0.01f * static_cast<float>(i) - 0.1f;
  NamedTensors in16 = in;
  std::vector<uint16_t> past16;
  for (float x : past) past16.push_back(f32_to_f16(x));
  for (const char* name : {"past_key.0", "past_value.0"}) {
    in[name] = f32({1, 1, 8, 4}, past);
    in16[name] = Tensor::from<uint16_t>(DType::kF16, {1, 1, 8, 4}, past16);
  }
  Session session(cpu_target());
  NamedTensors want = session.compile(plain).run(in), got = session.compile(g).run(in16);
  for (auto [out, dtype] : {std::pair{"a", DType::kF32}, std::pair{"s", DType::kF32},
                            std::pair{"kc", DType::kF16}, std::pair{"vc", DType::kF16}}) {
    EXPECT_EQ(got.at(out).dtype(), dtype) << out;
    EXPECT_LE(max_abs_diff(got.at(out), want.at(out)), 2e-3) << out;
  }

  Graph main =
      parse_graph("graph @main(%x: f32[2]) {\n  %y = add(%x, %x) : f32[2]\n  return %y\n}\n");
  EXPECT_EQ(llm::set_kv_cache_dtype(main, DType::kF16), 0);
  EXPECT_THROW(llm::set_kv_cache_dtype(g, DType::kI32), Error);
}

// Each prompt's generated tokens are its row of the reference's greedy_tokens [rows, steps].
void expect_reference_tokens(const llm::DecodeResult& r, const Tensor& expected) {
  const int64_t rows = expected.shape()[0], steps = expected.shape()[1];
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int64_t> want(expected.as<int64_t>() + i * steps,
                              expected.as<int64_t>() + (i + 1) * steps);
    EXPECT_EQ(r.tokens[i], want) << "prompt " << i;
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
  llm::Decoder decoder(model, cpu_target());
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
  expect_reference_tokens(r, expected);
}

// The callback hears each row's token as the step that chose it ends (rows in order within a
// step, a step's tokens before the next step's), the same tokens the result holds. Sampling with
// top_k 1 goes through the sampler and still gives the reference's greedy tokens.
TEST_P(DecoderParity, TokenCallbackAndTopKOneSeeTheGreedyTokensStepByStep) {
  RLX_FIXTURE(dir, GetParam());
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");
  const Tensor& expected = ref.at("greedy_tokens");
  const int64_t rows = expected.shape()[0], steps = expected.shape()[1];
  Model model = load_model(dir);
  llm::Decoder decoder(model, cpu_target());
  llm::DecodeOptions options;
  options.max_new_tokens = steps;
  options.sampling.temperature = 1.5;
  options.sampling.top_k = 1;
  std::vector<std::pair<int64_t, int64_t>> heard;
  options.on_token = [&](int64_t row, int64_t token) { heard.emplace_back(row, token); };
  llm::DecodeResult r = decoder.run(prompts, options);
  ASSERT_EQ(static_cast<int64_t>(heard.size()), rows * steps);
  for (int64_t i = 0; i < rows * steps; ++i) {
    const int64_t row = i % rows, step = i / rows;
    EXPECT_EQ(heard[i].first, row) << "call " << i;
    EXPECT_EQ(heard[i].second, expected.as<int64_t>()[row * steps + step]) << "call " << i;
    EXPECT_EQ(heard[i].second, r.tokens[row][step]) << "call " << i;
  }
}

// With the KV cache kept in f16 (--kv-cache f16) the greedy tokens are still the reference's,
// from a cache of half the bytes.
TEST_P(DecoderParity, GreedyTokensWithF16KvCacheMatchReference) {
  RLX_FIXTURE(dir, GetParam());
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");
  const Tensor& expected = ref.at("greedy_tokens");
  const int64_t rows = expected.shape()[0], steps = expected.shape()[1];
  llm::DecodeOptions options;
  options.max_new_tokens = steps;
  Model model = load_model(dir);
  const llm::DecodeResult f32 = llm::Decoder(model, cpu_target()).run(prompts, options);
  EXPECT_GT(llm::set_kv_cache_dtype(model.graphs.at("decode"), DType::kF16), 0);
  const llm::DecodeResult r = llm::Decoder(model, cpu_target()).run(prompts, options);
  EXPECT_EQ(f32.cache_dtype, DType::kF32);
  EXPECT_EQ(r.cache_dtype, DType::kF16);
  EXPECT_EQ(2 * r.cache_bytes, f32.cache_bytes);
  ASSERT_EQ(static_cast<int64_t>(r.tokens.size()), rows);
  expect_reference_tokens(r, expected);
}

// The logits of decode steps over a 16-bit cache against the same steps over an f32 cache, fed
// the reference's greedy tokens (so both read the same positions): the only difference is each
// cached key and value rounded to f16 (11 significant bits) or bf16 (8).
TEST_P(DecoderParity, DecodeLogitsWith16BitKvCacheAreCloseToF32Cache) {
  RLX_FIXTURE(dir, GetParam());
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");
  const Tensor& greedy = ref.at("greedy_tokens");
  const int64_t steps = greedy.shape()[1];
  Model model = load_model(dir);
  // The same decode steps with the cache in `dtype`.
  auto logits_with = [&](DType dtype) {
    Model m = model;
    llm::set_kv_cache_dtype(m.graphs.at("decode"), dtype);
    return teacher_forced_decode_logits(m, prompts, greedy, llm::kCapacityStep);
  };
  const std::vector<double> f32 = logits_with(DType::kF32);
  double scale = 0;
  for (double x : f32) scale = std::max(scale, std::fabs(x));
  // Measured on cpu (2026-12), max abs difference / max |logit|: f16 qwen3-tiny 4.7e-4,
  // llama-tiny 6.3e-4 (f16's unit roundoff is 4.9e-4); bf16 4.0e-3 and 4.6e-3 (3.9e-3). The bounds
  // are about 8x.
  for (auto [dtype, bound] : {std::pair{DType::kF16, 5e-3}, std::pair{DType::kBF16, 4e-2}}) {
    const std::vector<double> got = logits_with(dtype);
    ASSERT_EQ(got.size(), f32.size());
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, std::fabs(got[i] - f32[i]));
    std::printf(
        "%s: %s cache, %lld decode steps: logits max abs difference %.3g of max |logit| "
        "%.3g (relative %.3g, limit %g)\n",
        GetParam(), std::string(dtype_name(dtype)).c_str(), static_cast<long long>(steps), err,
        scale, err / scale, bound);
    EXPECT_LE(err / scale, bound) << dtype_name(dtype);
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
