// Graph passes: text in, text out.
#include <gtest/gtest.h>

#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"

namespace rlx {
namespace {

std::string run_passes(const char* text) {
  Graph g = parse_graph(text);
  run_default_passes(g);
  return print_graph(g);
}

TEST(Passes, FoldsConstantsAndDimSizes) {
  EXPECT_EQ(run_passes(R"(graph @g(%x: f32[2,3]) {
  %a = constant() {value = dense<f64[]: [2.0]>} : f64[]
  %b = convert(%a) {dtype = f32} : f32[]
  %c = mul(%b, %b) : f32[]
  %d = dim_size(%x) {dim = 1} : i64[]
  %e = convert(%d) {dtype = f32} : f32[]
  %f = add(%c, %e) : f32[]
  %g = broadcast_in_dim(%f) {dims = [], shape = [2, 3]} : f32[2,3]
  %y = add(%x, %g) : f32[2,3]
  return %y
}
)"),
            R"(graph @g(%x: f32[2,3]) {
  %f = constant() {value = dense<f32[]: [7.0]>} : f32[]
  %g = broadcast_in_dim(%f) {dims = [], shape = [2, 3]} : f32[2,3]
  %y = add(%x, %g) : f32[2,3]
  return %y
}
)");
}

TEST(Passes, FoldingFollowsTargetSemanticsForNanAndIntegerDivision) {
  EXPECT_EQ(run_passes(R"(graph @g() {
  %a = constant() {value = dense<f32[2]: [nan, 1.0]>} : f32[2]
  %b = constant() {value = dense<f32[2]: [2.0, 3.0]>} : f32[2]
  %m = max(%a, %b) : f32[2]
  %i = constant() {value = dense<i32[2]: [7, -7]>} : i32[2]
  %z = constant() {value = dense<i32[2]: [0, 2]>} : i32[2]
  %q = div(%i, %z) : i32[2]
  return %m, %q
}
)"),
            R"(graph @g() {
  %m = constant() {value = dense<f32[2]: [nan, 3.0]>} : f32[2]
  %q = constant() {value = dense<i32[2]: [0, -3]>} : i32[2]
  return %m, %q
}
)");
}

TEST(Passes, CseDceAndIdentityRemoval) {
  EXPECT_EQ(run_passes(R"(graph @g(%x: f32[2,3]) {
  %a = exp(%x) : f32[2,3]
  %b = exp(%x) : f32[2,3]
  %dead = log(%x) : f32[2,3]
  %r = reshape(%a) {shape = [2, 3]} : f32[2,3]
  %t1 = transpose(%b) {perm = [1, 0]} : f32[3,2]
  %t2 = transpose(%t1) {perm = [1, 0]} : f32[2,3]
  %y = add(%r, %t2) : f32[2,3]
  return %y
}
)"),
            R"(graph @g(%x: f32[2,3]) {
  %a = exp(%x) : f32[2,3]
  %y = add(%a, %a) : f32[2,3]
  return %y
}
)");
}

// A float widened and narrowed back is itself (f16 -> f32 -> f16 is exact); narrowed and
// widened back it is rounded, so that pair stays, as does a round trip through an integer.
TEST(Passes, ExactConvertRoundTripsAreRemoved) {
  EXPECT_EQ(run_passes(R"(graph @g(%h: f16[4], %x: f32[4]) {
  %w = convert(%h) {dtype = f32} : f32[4]
  %n = convert(%w) {dtype = f16} : f16[4]
  %d = convert(%x) {dtype = f64} : f64[4]
  %x2 = convert(%d) {dtype = f32} : f32[4]
  %r = convert(%x) {dtype = bf16} : bf16[4]
  %x3 = convert(%r) {dtype = f32} : f32[4]
  %i = convert(%x) {dtype = i32} : i32[4]
  %x4 = convert(%i) {dtype = f32} : f32[4]
  return %n, %x2, %x3, %x4
}
)"),
            R"(graph @g(%h: f16[4], %x: f32[4]) {
  %r = convert(%x) {dtype = bf16} : bf16[4]
  %x3 = convert(%r) {dtype = f32} : f32[4]
  %i = convert(%x) {dtype = i32} : i32[4]
  %x4 = convert(%i) {dtype = f32} : f32[4]
  return %h, %x, %x3, %x4
}
)");
}

// Two Recv nodes alike are two messages (and two AllReduces two calls every rank makes): merged,
// the second message would be read as the first's.
TEST(Passes, CseNeverMergesCollectives) {
  const char* text = R"(graph @g(%x: f32[2,3]) {
  %a = Recv(%x) {peer = 1} : f32[2,3]
  %b = Recv(%x) {peer = 1} : f32[2,3]
  %c = AllReduce(%x) {reduce = "sum"} : f32[2,3]
  %d = AllReduce(%x) {reduce = "sum"} : f32[2,3]
  %s = add(%a, %b) : f32[2,3]
  %t = add(%c, %d) : f32[2,3]
  %y = add(%s, %t) : f32[2,3]
  return %y
}
)";
  EXPECT_EQ(run_passes(text), text);
}

TEST(Passes, SpecializeBindsSymbols) {
  Graph g = parse_graph("graph @g(%x: f32[B,4]) {\n  %y = reshape(%x) {shape = [B, 2, 2]} : f32[B,2,2]\n  return %y\n}\n");
  EXPECT_EQ(print_graph(specialize(g, {{"B", 3}})),
            "graph @g(%x: f32[3,4]) {\n  %y = reshape(%x) {shape = [3, 2, 2]} : f32[3,2,2]\n  return %y\n}\n");
}

}  // namespace
}  // namespace rlx
