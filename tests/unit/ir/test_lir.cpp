// MIR -> LIR: fusion decisions, aliases and the buffer plan.
#include <gtest/gtest.h>

#include "rlx/core/lir.h"
#include "shared_ir_target.h"

namespace rlx {
namespace {

using ir_test::lower;

int loops(const lir::Program& p) {
  int n = 0;
  for (auto& k : p.kernels) n += std::holds_alternative<lir::LoopKernel>(k);
  return n;
}

TEST(Lir, ElementwiseChainWithBroadcastFusesIntoOneKernel) {
  auto p = lower(R"(graph @g(%x: f32[4,8], %b: f32[8]) {
  %bb = broadcast_in_dim(%b) {dims = [1], shape = [4, 8]} : f32[4,8]
  %a = add(%x, %bb) : f32[4,8]
  %e = exp(%a) : f32[4,8]
  %t = transpose(%e) {perm = [1, 0]} : f32[8,4]
  %y = neg(%t) : f32[8,4]
  return %y
}
)");
  ASSERT_EQ(p.kernels.size(), 1u);
  auto& k = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_EQ(k.domain, (std::vector<int64_t>{8, 4}));
  // x is read transposed (strides 1 and 8), b broadcast along the second loop dim (stride 0).
  EXPECT_EQ(k.exprs[0].load.strides, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(k.exprs[1].load.strides, (std::vector<int64_t>{1, 0}));
}

TEST(Lir, SoftmaxIsTwoReductionsAndTwoElementwiseKernels) {
  auto p = lower(R"(graph @g(%x: f32[4,8]) {
  %y = Softmax(%x) {axis = -1} : f32[4,8]
  return %y
}
)");
  // max; exp(x - max), materialised because both the sum and the division read it; sum; div.
  EXPECT_EQ(loops(p), 4);
  EXPECT_EQ(p.kernels.size(), 4u);
}

TEST(Lir, ReshapeIsAnAliasAndTheArenaReusesDeadBuffers) {
  auto p = lower(R"(graph @g(%x: f32[64]) {
  %a = exp(%x) : f32[64]
  %a2 = mul(%a, %a) : f32[64]
  %r = reshape(%a2) {shape = [8, 8]} : f32[8,8]
  %b = log(%r) : f32[8,8]
  %b2 = mul(%b, %b) : f32[8,8]
  %c = sqrt(%b2) : f32[8,8]
  %c2 = mul(%c, %c) : f32[8,8]
  %y = neg(%c2) : f32[8,8]
  return %y
}
)");
  int aliases = 0;
  for (auto& b : p.buffers) aliases += b.kind == lir::BufferKind::kAlias;
  EXPECT_EQ(aliases, 1);
  // Temporaries: a, a2, b, b2(inlined? no: used twice), c, c2 ... at most two live at once.
  EXPECT_LE(p.arena_bytes, 2 * 256);
}

}  // namespace
}  // namespace rlx
