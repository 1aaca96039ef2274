// The ane target's packages evaluated by coremltools (coremltools_runner.h says what that
// proves): programs mixing every kind of op against the cpu target, the index check, the HIR ops
// it writes as one MIL op each, and the model fixtures against their independent references.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "coremltools_runner.h"
#include "model_support.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/precision.h"
#include "rlx/core/runtime.h"
#include "rlx/llm/decoding.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;
using ane::test::ane_on_coremltools;
using test::cpu_target;
using test::expect_all_close;
using test::run_text;
using test::uniform_f32;

#define RLX_NEEDS_COREMLTOOLS()                                          \
  do {                                                                   \
    static const std::string missing = ane::test::coremltools_missing(); \
    if (!missing.empty()) GTEST_SKIP() << missing;                       \
  } while (0)

Tensor ids(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Tensor::from(DType::kI64, std::move(shape), v);
}

// Elementwise ops (the float remainder's sign, neg of zero, log and rsqrt without MIL's
// epsilon), f16 sums accumulated in f32, broadcasts, strided slices, concat, padding, a batched
// dot_general with transposed operands, gathers with negative indices, i64 values crossing as their
// words, bool outputs.
TEST(AneOnCoreMlTools, MixedProgramAgreesWithCpu) {
  RLX_NEEDS_COREMLTOOLS();
  const char* ir =
      R"(graph @t(%x: f32[2, 3, 4], %y: f32[2, 3, 4], %w: f32[2, 4, 5], %ids: i64[3], %h: f16[2, 64]) {
  %r = rem(%x, %y) : f32[2, 3, 4]
  %n = neg(%x) : f32[2, 3, 4]
  %a = abs(%y) : f32[2, 3, 4]
  %l = log(%a) : f32[2, 3, 4]
  %q = rsqrt(%a) : f32[2, 3, 4]
  %e = erf(%x) : f32[2, 3, 4]
  %mx = max(%x, %y) : f32[2, 3, 4]
  %c = lt(%x, %y) : bool[2, 3, 4]
  %s = select(%c, %x, %y) : f32[2, 3, 4]
  %d = dot_general(%x, %w) {lhs_batch = [0], rhs_batch = [0], lhs_contract = [2], rhs_contract = [1]} : f32[2, 3, 5]
  %t = transpose(%d) {perm = [0, 2, 1]} : f32[2, 5, 3]
  %b = broadcast_in_dim(%t) {dims = [0, 1, 3], shape = [2, 5, 4, 3]} : f32[2, 5, 4, 3]
  %sl = slice(%b) {start = [0, 1, 1, 0], limit = [2, 4, 4, 3], strides = [1, 2, 2, 1]} : f32[2, 2, 2, 3]
  %cc = concat(%sl, %sl) {axis = 3} : f32[2, 2, 2, 6]
  %z = constant() {value = dense<f32[]: [0.5]>} : f32[]
  %p = pad(%cc, %z) {low = [0, 0, 1, 0], high = [1, 0, 0, 2]} : f32[3, 2, 3, 8]
  %sum = reduce_sum(%h) {axes = [1]} : f16[2]
  %hmax = reduce_max(%h) {axes = [0]} : f16[64]
  %i = bitcast(%ids) {dtype = i32} : i32[3, 2]
  %lo = slice(%i) {start = [0, 0], limit = [3, 1]} : i32[3, 1]
  %lo1 = reshape(%lo) {shape = [3]} : i32[3]
  %g = gather(%x, %lo1) {axis = 2} : f32[2, 3, 3]
  return %r, %n, %l, %q, %e, %mx, %c, %s, %p, %sum, %hmax, %g, %ids
}
)";
  std::mt19937 rng(11);
  Tensor x = uniform_f32(rng, {2, 3, 4}, 3.0f), y = uniform_f32(rng, {2, 3, 4}, 2.0f);
  x.as<float>()[0] = 0.0f;  // neg(0) is -0
  Tensor h(DType::kF16, {2, 64});
  for (int64_t i = 0; i < h.numel(); ++i)
    h.as<uint16_t>()[i] = 0x3C00 + static_cast<uint16_t>(i % 7);  // 1 + i/1024
  NamedTensors in = {{"x", x},
                     {"y", y},
                     {"w", uniform_f32(rng, {2, 4, 5}, 1.0f)},
                     {"ids", ids({3}, {3, -1, -4})},
                     {"h", h}};
  NamedTensors want = run_text(ir, in, cpu_target()), got = run_text(ir, in, ane_on_coremltools());
  EXPECT_TRUE(std::signbit(got.at("n").as<float>()[0]));
  NamedTensors want_f16 = {{"sum", want.at("sum")}, {"hmax", want.at("hmax")}};
  want.erase("sum");
  want.erase("hmax");
  expect_all_close(want, got, 2e-6);
  expect_all_close(want_f16, got, 1e-3);
}

// rlx's integer division truncates and gives 0 for a zero divisor; i64 products on word pairs
// (split-i64).
TEST(AneOnCoreMlTools, IntegerDivisionTruncatesAndI64ProductsAreExact) {
  RLX_NEEDS_COREMLTOOLS();
  const char* ir = R"(graph @t(%a: i32[5], %b: i32[5], %x: i64[3], %y: i64[3]) {
  %q = div(%a, %b) : i32[5]
  %r = rem(%a, %b) : i32[5]
  %p = mul(%x, %y) : i64[3]
  return %q, %r, %p
}
)";
  NamedTensors out =
      run_text(ir,
               {{"a", Tensor::from(DType::kI32, {5}, std::vector<int32_t>{-7, 7, 7, 5, -9})},
                {"b", Tensor::from(DType::kI32, {5}, std::vector<int32_t>{2, -2, 0, 5, -4})},
                {"x", ids({3}, {4294967297LL, -3, 123456789012LL})},
                {"y", ids({3}, {3, 5000000000LL, -7})}},
               ane_on_coremltools());
  EXPECT_EQ(test::values(out.at("q")), (std::vector<double>{-3, -3, 0, 1, 2}));
  EXPECT_EQ(test::values(out.at("r")), (std::vector<double>{-1, 1, 0, 0, -1}));
  const int64_t* p = out.at("p").as<int64_t>();
  EXPECT_EQ(p[0], 12884901891LL);
  EXPECT_EQ(p[1], -15000000000LL);
  EXPECT_EQ(p[2], -864197523084LL);
}

// scatter with 2-D indices (flattened to one axis) writing rows of a middle axis, negative
// indices counting from the end. (reduce = "add" is emitted as MIL's mode "add", which
// coremltools' evaluator runs as "update": it cannot be checked here.)
TEST(AneOnCoreMlTools, ScatterUpdatesAsOnCpu) {
  RLX_NEEDS_COREMLTOOLS();
  const char* ir = R"(graph @t(%x: f32[2, 5, 3], %i: i32[2, 2], %u: f32[2, 2, 2, 3]) {
  %w = scatter(%x, %i, %u) {axis = 1, reduce = "none"} : f32[2, 5, 3]
  return %w
}
)";
  std::mt19937 rng(7);
  NamedTensors in = {{"x", uniform_f32(rng, {2, 5, 3}, 1.0f)},
                     {"i", Tensor::from(DType::kI32, {2, 2}, std::vector<int32_t>{0, 3, -1, 1})},
                     {"u", uniform_f32(rng, {2, 2, 2, 3}, 1.0f)}};
  expect_all_close(run_text(ir, in, cpu_target()), run_text(ir, in, ane_on_coremltools()), 1e-6);
}

TEST(AneOnCoreMlTools, OutOfRangeGatherIndexIsAnError) {
  RLX_NEEDS_COREMLTOOLS();
  const char* ir = R"(graph @t(%x: f32[4, 2], %i: i32[3]) {
  %g = gather(%x, %i) {axis = 0} : f32[3, 2]
  return %g
}
)";
  NamedTensors in = {{"x", test::f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
                     {"i", Tensor::from(DType::kI32, {3}, std::vector<int32_t>{0, 4, 1})}};
  try {
    run_text(ir, in, ane_on_coremltools());
    FAIL() << "an index outside the axis must be an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "gather: index 4 (at position 1 of the indices) is out of range for an axis of size 4"),
        std::string::npos)
        << e.what();
  }
}

// Linear, LayerNorm, GELU and Softmax are one MIL op each, in the sequence coremltools' own MIL
// builder writes for the same block, and compute what the cpu's decompositions do.
TEST(AneOnCoreMlTools, NativeOpsAreOneMilOpEach) {
  RLX_NEEDS_COREMLTOOLS();
  // Weights held by the program (MIL's linear and layer_norm take them as consts) and computed
  // ones (a matmul, then the scale and shift), against the cpu's decompositions.
  const char* ir = R"(graph @t(%x: f32[2, 3], %g2: f32[4]) {
  %w = constant() {value = dense<f32[4,3]: [0.5, -1, 0.25, 1, 0.75, -0.5, -0.25, 0.5, 1, 0.1, 0.2, 0.3]>} : f32[4,3]
  %b = constant() {value = dense<f32[4]: [0.1, -0.2, 0.3, 0]>} : f32[4]
  %g = constant() {value = dense<f32[4]: [1, 0.5, 2, 1.5]>} : f32[4]
  %be = constant() {value = dense<f32[4]: [0, 0.1, -0.1, 0.2]>} : f32[4]
  %h = Linear(%x, %w, %b) : f32[2, 4]
  %n = LayerNorm(%h, %g, %be) {epsilon = 1e-5} : f32[2, 4]
  %a = GELU(%n) : f32[2, 4]
  %s = Softmax(%a) {axis = -1} : f32[2, 4]
  %m = LayerNorm(%s, %g2) {epsilon = 1e-5} : f32[2, 4]
  return %s, %m
}
)";
  std::mt19937 rng(3);
  NamedTensors in = {{"x", uniform_f32(rng, {2, 3}, 1.0f)}, {"g2", uniform_f32(rng, {4}, 1.0f)}};
  expect_all_close(run_text(ir, in, cpu_target()), run_text(ir, in, ane_on_coremltools()), 2e-6);

  const fs::path dir = fs::temp_directory_path() / "rlx_ane_native";
  fs::remove_all(dir);
  CompiledModel model = Session(ane_on_coremltools()).compile(parse_graph(ir));
  ane_on_coremltools()->emit_mir(model.mir_for({}), dir);
  const std::string summary = ane::test::check_package(dir / ane::kPackageName);
  fs::remove_all(dir);
  // The same sequence coremltools' own MIL builder writes for this block.
  const std::string want = ane::test::builder_reference_ops();
  EXPECT_EQ(want, R"(["linear", "layer_norm", "gelu", "softmax", "layer_norm", "mul"])");
  EXPECT_NE(summary.find("\"op_types\": " + want), std::string::npos) << summary << " vs " << want;
}

// The weights of `n` rows of `k` int8 values in [-127, 127] as IR text.
std::string int8_literal(int64_t n, int64_t k, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-127, 127);
  std::string s;
  for (int64_t i = 0; i < n * k; ++i) s += (i ? ", " : "") + std::to_string(d(rng));
  return fmt::format("dense<i8[{},{}]: [{}]>", n, k, s);
}

// QMatMul, dynamic (3 inputs, a bias as a 4th) and static (x_scale, x_zero): the weights stay
// int8 in the package (constexpr_affine_dequantize) and the activations are rounded to u8 as
// the cpu's int8 GEMM rounds them. K = 600 takes two fp32 products added in int32 (each of at
// most 512 terms is exact); a row of zeros (an empty range, scale 1) and a row of one positive
// value (its range widened to hold 0) are edge cases of the per-row parameters.
TEST(AneOnCoreMlTools, QMatMulAgreesWithCpu) {
  RLX_NEEDS_COREMLTOOLS();
  std::mt19937 rng(5);
  const std::string ir = fmt::format(
      R"(graph @t(%x: f32[2, 3, 600], %y: f32[4, 40], %ws: f32[6]) {{
  %w = constant() {{value = {}}} : i8[6, 600]
  %b = constant() {{value = dense<f32[6]: [0.5, -1, 0.25, 0, 2, -0.125]>}} : f32[6]
  %q = QMatMul(%x, %w, %ws, %b) : f32[2, 3, 6]
  %v = constant() {{value = {}}} : i8[3, 40]
  %vs = constant() {{value = dense<f32[3]: [0.01, 0.02, 0.005]>}} : f32[3]
  %s = constant() {{value = dense<f32[]: [0.0125]>}} : f32[]
  %z = constant() {{value = dense<u8[]: [131]>}} : u8[]
  %d = QMatMul(%y, %v, %vs) : f32[4, 3]
  %f = QMatMul(%y, %v, %vs, %s, %z) : f32[4, 3]
  return %q, %d, %f
}}
)",
      int8_literal(6, 600, rng), int8_literal(3, 40, rng));
  Tensor x = uniform_f32(rng, {2, 3, 600}, 3.0f), y = uniform_f32(rng, {4, 40}, 1.5f);
  for (int64_t i = 0; i < 600; ++i) x.as<float>()[600 + i] = 0.0f;  // an empty range
  for (int64_t i = 0; i < 40; ++i) y.as<float>()[40 + i] = 0.75f;   // a range widened to 0
  NamedTensors in = {{"x", x}, {"y", y}, {"ws", uniform_f32(rng, {6}, 0.02f)}};
  NamedTensors want = run_text(ir, in, cpu_target()), got = run_text(ir, in, ane_on_coremltools());
  // The same f32 operations in the same order: equal but for the last bit of a product.
  expect_all_close(want, got, 1e-6);
  std::printf("ane QMatMul vs cpu: max abs %.3g %.3g %.3g\n",
              test::max_abs_diff(want.at("q"), got.at("q")),
              test::max_abs_diff(want.at("d"), got.at("d")),
              test::max_abs_diff(want.at("f"), got.at("f")));
}

// The int8 weights must be constants (constexpr_affine_dequantize holds them), and the op came
// with iOS16: anything else is refused by name.
TEST(AneOnCoreMlTools, QMatMulRefusesComputedWeightsAndOldDeployments) {
  const char* ir = R"(graph @t(%x: f32[2, 4], %w: i8[3, 4], %ws: f32[3]) {
  %y = QMatMul(%x, %w, %ws) : f32[2, 3]
  return %y
}
)";
  std::string computed;
  try {
    run_text(ir,
             {{"x", test::f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})},
              {"w", Tensor::from(DType::kI8, {3, 4}, std::vector<int8_t>(12, 1))},
              {"ws", test::f32({3}, {1, 1, 1})}},
             ane_on_coremltools());
  } catch (const Error& e) {
    computed = e.what();
  }
  EXPECT_NE(computed.find("constexpr_affine_dequantize, which takes constants only"),
            std::string::npos)
      << computed;
  auto ios15 = std::make_shared<ane::test::AneOnCoreMlTools>();
  ASSERT_EQ(ios15->select("ios15"), nullptr);
  const char* constant = R"(graph @t(%x: f32[2, 4], %ws: f32[3]) {
  %w = constant() {value = dense<i8[3,4]: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]>} : i8[3, 4]
  %y = QMatMul(%x, %w, %ws) : f32[2, 3]
  return %y
}
)";
  const std::string old = test::compile_error(constant, ios15);
  EXPECT_NE(old.find("constexpr_affine_dequantize, which iOS15 lacks"), std::string::npos) << old;
}

// all-MiniLM's layout in f16 storage against the float64 reference (transformers).
TEST(AneOnCoreMlTools, MiniLmMatchesFloat64Reference) {
  RLX_NEEDS_COREMLTOOLS();
  RLX_FIXTURE(dir, "minilm-l2-f16");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = test::load_model(dir);
  NamedTensors out = Session(ane_on_coremltools())
                         .compile(model.graph("main"))
                         .run({{"input_ids", ref.at("input_ids")},
                               {"attention_mask", ref.at("attention_mask")},
                               {"token_type_ids", ref.at("token_type_ids")}});
  const double err =
      test::max_abs_diff(out.at("last_hidden_state"), ref.at("last_hidden_state_f64"));
  std::printf("ane minilm-l2-f16: hidden max abs error vs float64 %.3g\n", err);
  EXPECT_LE(err, 1e-4);
}

// The Neural Engine computes in fp16: asked for with --precision f16 (amp-f16 keeps norms and
// softmax in f32), the package computes in fp16 with fp32 accumulation and stays near float64.
TEST(AneOnCoreMlTools, MiniLmInF16StaysNearFloat64Reference) {
  RLX_NEEDS_COREMLTOOLS();
  RLX_FIXTURE(dir, "minilm-l2-f16");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Model model = test::load_model(dir);
  for (const char* mode : {"f16", "amp-f16"}) {
    Graph g = model.graph("main");
    ASSERT_TRUE(apply_precision(g, parse_precision(mode)).changed()) << mode;
    NamedTensors out = Session(ane_on_coremltools())
                           .compile(g)
                           .run({{"input_ids", ref.at("input_ids")},
                                 {"attention_mask", ref.at("attention_mask")},
                                 {"token_type_ids", ref.at("token_type_ids")}});
    const Tensor& emb = out.at("sentence_embedding");
    double worst = 1;
    for (int64_t r = 0; r < emb.shape()[0]; ++r)
      worst = std::min(worst, test::cosine(emb, ref.at("sentence_embedding_f64"), r, emb.shape()[1]));
    std::printf("ane minilm-l2-f16 --precision %s: 1 - min cosine vs float64 %.3g\n", mode, 1 - worst);
    EXPECT_LE(1 - worst, 1e-4) << mode;  // the bound the other targets keep for f16 modes
  }
}

TEST(AneOnCoreMlTools, BertTinyOnnxMatchesOnnxRuntime) {
  RLX_NEEDS_COREMLTOOLS();
  RLX_FIXTURE(dir, "bert-tiny-onnx");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = test::load_model(dir / "model.onnx");
  NamedTensors out = Session(ane_on_coremltools())
                         .compile(model.graph())
                         .run({{"input_ids", ref.at("input_ids")},
                               {"attention_mask", ref.at("attention_mask")},
                               {"token_type_ids", ref.at("token_type_ids")}});
  const double err =
      test::max_abs_diff(out.at("last_hidden_state"), ref.at("last_hidden_state_ort"));
  std::printf("ane bert-tiny-onnx: max abs error vs ONNX Runtime %.3g\n", err);
  EXPECT_LE(err, 1e-4);
}

// The decoders' prompt logits (causal attention, RoPE, RMSNorm, grouped kv heads) against
// float64 references.
void prompt_logits(const char* fixture, double bound) {
  RLX_FIXTURE(dir, fixture);
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  Model model = test::load_model(dir);
  NamedTensors out = Session(ane_on_coremltools())
                         .compile(model.graph("main"))
                         .run({{"input_ids", ref.at("prompts")}});
  const double err = test::max_abs_diff(out.at("logits"), ref.at("prompt_logits_f64"));
  std::printf("ane %s: prompt logits max abs error vs float64 %.3g\n", fixture, err);
  EXPECT_LE(err, bound);
}

TEST(AneOnCoreMlTools, Qwen3TinyPromptLogitsMatchFloat64Reference) {
  RLX_NEEDS_COREMLTOOLS();
  prompt_logits("qwen3-tiny", 1e-4);
}

// Generation through packages: prefill, then decode steps whose KV cache is an input and an
// output of the package (CoreML's state type is not used yet), greedy tokens as transformers'.
TEST(AneOnCoreMlTools, Qwen3TinyDecodesTheReferenceTokens) {
  RLX_NEEDS_COREMLTOOLS();
  RLX_FIXTURE(dir, "qwen3-tiny");
  TensorMap ref = read_safetensors(dir / "reference.safetensors");
  const Tensor& prompts = ref.at("prompts");
  const Tensor& greedy = ref.at("greedy_tokens");
  const int64_t len = prompts.shape()[1], steps = 4;
  Tensor first = Tensor::from(DType::kI64, {1, len},
                              std::vector<int64_t>(prompts.as<int64_t>(), prompts.as<int64_t>() + len));
  llm::Decoder decoder(test::load_model(dir), ane_on_coremltools());
  llm::DecodeOptions options;
  options.max_new_tokens = steps;
  llm::DecodeResult r = decoder.run(first, options);
  ASSERT_EQ(r.tokens.size(), 1u);
  EXPECT_EQ(r.tokens[0], std::vector<int64_t>(greedy.as<int64_t>(), greedy.as<int64_t>() + steps));
}

TEST(AneOnCoreMlTools, LlamaTinyPromptLogitsMatchFloat64Reference) {
  RLX_NEEDS_COREMLTOOLS();
  prompt_logits("llama-tiny", 1e-4);
}

}  // namespace
}  // namespace rlx
