// The textual IR prints and parses back exactly.
#include <gtest/gtest.h>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"

namespace rlx {
namespace {

const char* kCanonical = R"(graph @mlp(%x: f32[B,4]) params(%w: f32[8,4], %b: f32[8]) {
  %h = Linear(%x, %w, %b) : f32[B,8] loc("fc1")
  %y = GELU(%h) {approximate = "tanh"} : f32[B,8]
  %c = constant() {value = dense<f16[2]: [0.5, -1.25]>} : f16[2]
  %s = slice(%y) {limit = [-1, 2], start = [0, 0], strides = [1, 1]} : f32[B,2]
  %e = reduce_max(%s) {axes = [1]} : f32[B]
  %"odd/name:0" = neg(%e) : f32[B]
  return %y, %"odd/name:0", %c
}
)";

TEST(IrText, CanonicalTextRoundTripsExactly) {
  Graph g = parse_graph(kCanonical, "t.rlx");
  EXPECT_EQ(print_graph(g), kCanonical);
  EXPECT_EQ(print_graph(parse_graph(print_graph(g))), kCanonical);
}

TEST(IrText, AttributeKindsRoundTrip) {
  const char* text = R"(graph @a(%x: f32[2,3]) {
  %y = broadcast_in_dim(%x) {dims = [1, 2], shape = [N, 2, 3]} : f32[N,2,3]
  %z = convert(%y) {dtype = bf16} : bf16[N,2,3]
  %f = constant() {value = dense<f64[3]: [1e-300, inf, -0.1]>} : f64[3]
  %i = constant() {value = dense<i64[2]: [-9223372036854775808, 9223372036854775807]>} : i64[2]
  %t = constant() {value = dense<bool[2]: [true, false]>} : bool[2]
  return %z, %f, %i, %t
}
)";
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(IrText, ProductDimsRoundTrip) {
  const char* text = R"(graph @p(%x: f32[B,S,4]) {
  %y = reshape(%x) {shape = [B*S, 4]} : f32[B*S,4]
  %z = reshape(%x) {shape = [4*B*S]} : f32[4*B*S]
  return %y, %z
}
)";
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(IrText, BuiltGraphPrintsAndParsesBack) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {Dim::symbol("S"), 4}});
  ValueId y = b.op("Softmax", {x}, {{"axis", int64_t{-1}}});
  b.output(y);
  std::string text = print_graph(g);
  EXPECT_EQ(print_graph(parse_graph(text)), text);
}

TEST(IrText, ErrorsCarryLineAndColumn) {
  auto error_of = [](const char* text) {
    try {
      parse_graph(text, "m.rlx");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("graph @g(%x: f32[2]) {\n  %y = Nope(%x) : f32[2]\n  return %y\n}\n"),
            "m.rlx:2:8: unknown op 'Nope'");
  EXPECT_EQ(error_of("graph @g(%x: f32[2]) {\n  %y = neg(%q) : f32[2]\n  return %y\n}\n"),
            "m.rlx:2:12: use of undefined value %q");
  EXPECT_EQ(error_of("graph @g(%x: f32[2]) {\n  %y = neg(%x) : f32[3]\n  return %y\n}\n"),
            "m.rlx:2:3: %y is declared f32[3] but neg gives f32[2]");
  EXPECT_EQ(error_of("graph @g(%x: q7[2]) {\n  return %x\n}\n"), "m.rlx:1:14: unknown dtype 'q7'");
  EXPECT_EQ(error_of("graph @g(%x: f32[2]) {\n  %y = add(%x) : f32[2]\n  return %y\n}\n"),
            "m.rlx:2:3: node %y (add): add takes 2 inputs, got 1");
}

}  // namespace
}  // namespace rlx
