// The precision policy (apply_precision): which nodes narrow, where converts go, how weights are
// stored, and what is refused. Graphs in as text, checked as text and by hand-computed values.
#include <gtest/gtest.h>

#include "rlx/core/autodiff.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"
#include "rlx/core/precision.h"

namespace rlx {
namespace {

const char* kMlp = R"(graph @mlp(%x: f32[2,4]) params(%w: f32[3,4], %b: f32[3], %v: f16[3,3]) {
  %h = Linear(%x, %w, %b) : f32[2,3] loc("fc1")
  %a = GELU(%h) : f32[2,3]
  %vw = Cast(%v) {dtype = f32} : f32[3,3]
  %y = MatMul(%a, %vw) : f32[2,3] loc("fc2")
  %s = Softmax(%y) : f32[2,3]
  return %s
}
)";

Graph mlp_with_weights() {
  Graph g = parse_graph(kMlp);
  g.weights["w"] = Tensor::from<float>(DType::kF32, {3, 4}, std::vector<float>(12, 0.1f));
  g.weights["b"] = Tensor::from<float>(DType::kF32, {3}, {1.0f / 3, -2.0f, 3.0f});
  g.weights["v"] = Tensor(DType::kF16, {3, 3});
  return g;
}

// --allow-tf32 marks the f32 products (not the softmax, not the f16 cast) and the mark reaches
// the dot_generals their decompositions make, where a TF32 library can read it.
TEST(Precision, AllowTf32MarksTheF32ProductsAndTheirDotGenerals) {
  Graph g = mlp_with_weights();
  const std::vector<std::string> marked = allow_tf32(g);
  ASSERT_EQ(marked.size(), 2u);
  EXPECT_NE(marked[0].find("Linear 'fc1'"), std::string::npos) << marked[0];
  EXPECT_NE(marked[1].find("MatMul 'fc2'"), std::string::npos) << marked[1];
  Graph mir = decompose_to_mir(g);
  int products = 0;
  for (const Node& n : mir.nodes)
    if (n.op == "dot_general") {
      ++products;
      EXPECT_TRUE(n.has_attr("tf32")) << print_graph(mir);
    }
  EXPECT_EQ(products, 2);
}

TEST(Precision, ParsesTheFiveModesAndRefusesOthersByName) {
  EXPECT_EQ(parse_precision("f32"), PrecisionMode::kAsIs);
  EXPECT_EQ(parse_precision("amp-bf16"), PrecisionMode::kAmpBF16);
  EXPECT_EQ(precision_name(PrecisionMode::kAmpF16), "amp-f16");
  try {
    parse_precision("fp16");
    FAIL() << "fp16 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp16' is not a precision"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("amp-bf16"), std::string::npos);
  }
}

TEST(Precision, AmpNarrowsProductsAndConvertsOnlyAtTheirBoundaries) {
  Graph g = mlp_with_weights();
  PrecisionReport r = apply_precision(g, PrecisionMode::kAmpF16);
  verify_graph(g);
  // The f32 weights of fc1 become f16 copies (no convert at run time); fc2 reads the f16 weight
  // the model stored, the model's own widening Cast left for DCE; GELU and Softmax stay f32.
  EXPECT_EQ(print_graph(g), R"(graph @mlp(%x: f32[2,4]) params(%w: f32[3,4], %b: f32[3], %v: f16[3,3], %w.f16: f16[3,4], %b.f16: f16[3]) {
  %x_f16 = convert(%x) {dtype = f16} : f16[2,4] loc("precision amp-f16")
  %h = Linear(%x_f16, %w.f16, %b.f16) : f16[2,3] loc("fc1")
  %h_f32 = convert(%h) {dtype = f32} : f32[2,3] loc("precision amp-f16")
  %a = GELU(%h_f32) : f32[2,3]
  %vw = Cast(%v) {dtype = f32} : f32[3,3]
  %a_f16 = convert(%a) {dtype = f16} : f16[2,3] loc("precision amp-f16")
  %y = MatMul(%a_f16, %v) : f16[2,3] loc("fc2")
  %y_f32 = convert(%y) {dtype = f32} : f32[2,3] loc("precision amp-f16")
  %s = Softmax(%y_f32) : f32[2,3]
  return %s
}
)");
  ASSERT_EQ(r.narrowed.size(), 2u);
  EXPECT_EQ(r.narrowed[0], "%h (Linear 'fc1') computes in f16");
  EXPECT_EQ(r.weights, (std::vector<std::string>{"w: f32 -> f16", "b: f32 -> f16"}));
  EXPECT_EQ(r.casts.size(), 4u);
  EXPECT_EQ(r.casts[0], "%x f32 -> f16 for %h (Linear 'fc1')");
  // The weight's values are f16's nearest: 1/3 rounds to 0x3555.
  EXPECT_EQ(g.weights.at("b.f16").as<uint16_t>()[0], 0x3555);
  EXPECT_EQ(f16_to_f32(g.weights.at("b.f16").as<uint16_t>()[1]), -2.0f);
}

TEST(Precision, WholeGraphModeNarrowsEveryNetworkOpAndKeepsTheOutputF32) {
  Graph g = mlp_with_weights();
  PrecisionReport r = apply_precision(g, PrecisionMode::kBF16);
  verify_graph(g);
  // Linear, GELU, MatMul and Softmax; the Cast (the model's own dtype choice) is not narrowed.
  EXPECT_EQ(r.narrowed.size(), 4u);
  // The output keeps its name and f32 type; the narrow value it converts is renamed.
  EXPECT_EQ(g.values[g.outputs[0]].name, "s");
  EXPECT_EQ(g.type(g.outputs[0]).dtype, DType::kF32);
  EXPECT_EQ(g.type(*g.find_value("s_bf16")).dtype, DType::kBF16);
  // x in, and s out; the f16 weight v is widened by its Cast and narrowed to bf16 again.
  EXPECT_EQ(r.casts.size(), 3u);
}

TEST(Precision, AnF16WeightBeyondItsRangeIsRefusedByNameAndBf16TakesIt) {
  Graph g = mlp_with_weights();
  g.weights["b"] = Tensor::from<float>(DType::kF32, {3}, {1.0f, 70000.0f, 0.0f});
  try {
    Graph copy = g;
    apply_precision(copy, PrecisionMode::kAmpF16);
    FAIL() << "a weight of 70000 was narrowed to f16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weight 'b' holds 70000 at element 1"),
              std::string::npos)
        << e.what();
  }
  Graph copy = g;
  apply_precision(copy, PrecisionMode::kAmpBF16);
  EXPECT_EQ(bf16_to_f32(copy.weights.at("b.bf16").as<uint16_t>()[1]), 70144.0f);
}

TEST(Precision, F32ModeAndGraphsWithoutF32ComputationChangeNothing) {
  Graph g = mlp_with_weights();
  const std::string before = print_graph(g);
  EXPECT_FALSE(apply_precision(g, PrecisionMode::kAsIs).changed());
  EXPECT_EQ(print_graph(g), before);
  Graph ints = parse_graph(R"(graph @i(%a: i32[4], %b: i32[4]) {
  %c = add(%a, %b) : i32[4]
  return %c
}
)");
  EXPECT_FALSE(apply_precision(ints, PrecisionMode::kF16).changed());
}

}  // namespace
}  // namespace rlx
