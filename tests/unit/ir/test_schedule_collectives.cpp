// schedule_collectives_early: an AllReduce (and the flattening of its operand) moves up to where
// its operand is computed; nothing else moves, and collectives keep their order.
#include <gtest/gtest.h>

#include "rlx/core/ir_text.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {
namespace {

std::string scheduled(const std::string& text, bool* changed = nullptr) {
  Graph g = parse_graph(text);
  const bool moved = schedule_collectives_early(g);
  if (changed) *changed = moved;
  verify_graph(g);
  return print_graph(g);
}

// A gradient bucket built after the backward pass: its reshape and AllReduce move up to the
// gradient, ahead of the backward work (%a, %b) they do not need.
TEST(ScheduleCollectives, BucketStartsWhereItsGradientIsDone) {
  const char* text = R"(graph @g(%x: f32[2,2], %w: f32[4]) {
  %g1 = mul(%x, %x) : f32[2,2]
  %a = exp(%w) : f32[4]
  %b = mul(%a, %w) : f32[4]
  %f = reshape(%g1) {shape = [4]} : f32[4]
  %r = AllReduce(%f) {reduce = "mean"} : f32[4]
  %y = add(%r, %b) : f32[4]
  return %y
}
)";
  const char* want = R"(graph @g(%x: f32[2,2], %w: f32[4]) {
  %g1 = mul(%x, %x) : f32[2,2]
  %f = reshape(%g1) {shape = [4]} : f32[4]
  %r = AllReduce(%f) {reduce = "mean"} : f32[4]
  %a = exp(%w) : f32[4]
  %b = mul(%a, %w) : f32[4]
  %y = add(%r, %b) : f32[4]
  return %y
}
)";
  bool changed = false;
  EXPECT_EQ(scheduled(text, &changed), want);
  EXPECT_TRUE(changed);
}

// Every rank must meet collectives in one order: the AllReduce may pass %c, never the Send.
TEST(ScheduleCollectives, CollectivesKeepTheirOrder) {
  const char* text = R"(graph @g(%x: f32[4]) {
  %a = exp(%x) : f32[4]
  %b = exp(%a) : f32[4]
  %s = Send(%b) {peer = 1} : f32[4]
  %c = exp(%s) : f32[4]
  %r = AllReduce(%x) {reduce = "sum"} : f32[4]
  %y = add(%c, %r) : f32[4]
  return %y
}
)";
  const char* want = R"(graph @g(%x: f32[4]) {
  %a = exp(%x) : f32[4]
  %b = exp(%a) : f32[4]
  %s = Send(%b) {peer = 1} : f32[4]
  %r = AllReduce(%x) {reduce = "sum"} : f32[4]
  %c = exp(%s) : f32[4]
  %y = add(%c, %r) : f32[4]
  return %y
}
)";
  EXPECT_EQ(scheduled(text), want);
}

// A reshape whose result is also used elsewhere (or returned) is not part of the bucket: it
// stays, and the AllReduce waits for it there.
TEST(ScheduleCollectives, SharedValuesAndGraphsWithoutAllReduceStay) {
  const char* shared = R"(graph @g(%x: f32[2,2], %w: f32[4]) {
  %a = exp(%w) : f32[4]
  %f = reshape(%x) {shape = [4]} : f32[4]
  %r = AllReduce(%f) {reduce = "sum"} : f32[4]
  %y = add(%r, %a) : f32[4]
  return %y, %f
}
)";
  bool changed = true;
  EXPECT_EQ(scheduled(shared, &changed), shared);
  EXPECT_FALSE(changed);
  const char* plain = R"(graph @g(%x: f32[4]) {
  %a = exp(%x) : f32[4]
  %b = Recv(%x) {peer = 1} : f32[4]
  %y = add(%a, %b) : f32[4]
  return %y
}
)";
  EXPECT_EQ(scheduled(plain, &changed), plain);
  EXPECT_FALSE(changed);
}

}  // namespace
}  // namespace rlx
