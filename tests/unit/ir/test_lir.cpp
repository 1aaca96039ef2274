// MIR -> LIR: fusion decisions, aliases and the buffer plan.
#include <gtest/gtest.h>

#include <algorithm>

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

// The storage buffers each loop kernel binds: the distinct buffers it loads, plus its store.
std::vector<size_t> buffers_per_kernel(const lir::Program& p) {
  std::vector<size_t> out;
  for (auto& k : p.kernels) {
    const auto& l = std::get<lir::LoopKernel>(k);
    std::vector<int32_t> ids;
    for (const lir::Expr& e : l.exprs)
      if (e.kind == lir::ExprKind::kLoad && std::find(ids.begin(), ids.end(), e.load.buffer) == ids.end())
        ids.push_back(e.load.buffer);
    out.push_back(ids.size() + l.stores.size());
  }
  return out;
}

// ((a+b)+(c+d)) + ((e+f)+(g+h)): one kernel of 9 buffers unbounded; with 4 buffers a kernel, the
// two widest operands are cut first, then whatever still does not fit.
constexpr const char* kEightInputSum = R"(graph @g(%a: f32[4], %b: f32[4], %c: f32[4], %d: f32[4], %e: f32[4], %f: f32[4], %g: f32[4], %h: f32[4]) {
  %ab = add(%a, %b) : f32[4]
  %cd = add(%c, %d) : f32[4]
  %abcd = add(%ab, %cd) : f32[4]
  %ef = add(%e, %f) : f32[4]
  %gh = add(%g, %h) : f32[4]
  %efgh = add(%ef, %gh) : f32[4]
  %y = add(%abcd, %efgh) : f32[4]
  return %y
}
)";

TEST(Lir, FusionRespectsTheDevicesBuffersPerKernel) {
  EXPECT_EQ(buffers_per_kernel(lower(kEightInputSum)), (std::vector<size_t>{9}));
  for (uint32_t cap : {3u, 4u, 5u, 8u}) {
    std::vector<size_t> sizes = buffers_per_kernel(lower(kEightInputSum, LoweringOptions{cap}));
    EXPECT_GT(sizes.size(), 1u) << cap;
    for (size_t s : sizes) EXPECT_LE(s, cap) << "cap " << cap;
  }
  // With 3 a kernel, every add is a kernel of its own (2 loads + 1 store).
  EXPECT_EQ(buffers_per_kernel(lower(kEightInputSum, LoweringOptions{3})), std::vector<size_t>(7, 3));
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

// The erf GELU after a bias add reads the sum twice (x * 0.5 and x / sqrt 2), both reads in one
// kernel: the add is computed at each read, not written to a buffer and read back. A longer
// chain read twice keeps its buffer (recomputing it would cost more than the pass it saves).
TEST(Lir, ASmallValueReadTwiceInOneKernelIsComputedAtEachRead) {
  auto p = lower(R"(graph @g(%x: f32[4,8], %b: f32[8]) {
  %bb = broadcast_in_dim(%b) {dims = [1], shape = [4, 8]} : f32[4,8]
  %a = add(%x, %bb) : f32[4,8]
  %h = constant() {value = dense<f32[]: [0.5]>} : f32[]
  %hb = broadcast_in_dim(%h) {dims = [], shape = [4, 8]} : f32[4,8]
  %r = constant() {value = dense<f32[]: [0.70710678]>} : f32[]
  %rb = broadcast_in_dim(%r) {dims = [], shape = [4, 8]} : f32[4,8]
  %half = mul(%a, %hb) : f32[4,8]
  %s = mul(%a, %rb) : f32[4,8]
  %e = erf(%s) : f32[4,8]
  %y = mul(%half, %e) : f32[4,8]
  return %y
}
)");
  EXPECT_EQ(loops(p), 1);
  auto long_chain = lower(R"(graph @g(%x: f32[4,8]) {
  %a = exp(%x) : f32[4,8]
  %b = neg(%a) : f32[4,8]
  %c = exp(%b) : f32[4,8]
  %d = neg(%c) : f32[4,8]
  %e = exp(%d) : f32[4,8]
  %y = mul(%e, %e) : f32[4,8]
  return %y
}
)");
  EXPECT_EQ(loops(long_chain), 2);
}

// A product's bias add followed by the head split (reshape, transpose) is written in the
// product's layout: a loop that only adds (what a product's epilogue takes), then a plain copy
// into heads (what attention reads in place). The same add before anything but a transpose
// stays fused into its reader.
TEST(Lir, ABiasAddBeforeAHeadSplitStaysInTheProductsLayout) {
  auto p = lower(R"(graph @g(%x: f32[2,5,8], %w: f32[8,8], %b: f32[8]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [0]} : f32[2,5,8]
  %bb = broadcast_in_dim(%b) {dims = [2], shape = [2, 5, 8]} : f32[2,5,8]
  %a = add(%y, %bb) : f32[2,5,8]
  %r = reshape(%a) {shape = [2, 5, 2, 4]} : f32[2,5,2,4]
  %t = transpose(%r) {perm = [0, 2, 1, 3]} : f32[2,2,5,4]
  return %t
}
)");
  ASSERT_EQ(p.kernels.size(), 3u);
  const auto& add = std::get<lir::LoopKernel>(p.kernels[1]);
  EXPECT_EQ(add.domain, (std::vector<int64_t>{2, 5, 8}));
  const auto& copy = std::get<lir::LoopKernel>(p.kernels[2]);
  EXPECT_EQ(copy.domain, (std::vector<int64_t>{2, 2, 5, 4}));
  ASSERT_EQ(copy.exprs.size(), 1u);
  EXPECT_EQ(copy.exprs[0].kind, lir::ExprKind::kLoad);
  auto fused = lower(R"(graph @g(%x: f32[2,5,8], %w: f32[8,8], %b: f32[8]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [0]} : f32[2,5,8]
  %bb = broadcast_in_dim(%b) {dims = [2], shape = [2, 5, 8]} : f32[2,5,8]
  %a = add(%y, %bb) : f32[2,5,8]
  %e = exp(%a) : f32[2,5,8]
  return %e
}
)");
  EXPECT_EQ(loops(fused), 1);
}

// A weight stored narrower than the computation (an f16 checkpoint run in f32) is widened by a
// kernel of its own, which reads only constants (so the targets run it once, not per run), and
// the bias add reads the widened buffer as a product's epilogue would, rather than converting
// the bias in the add's kernel.
TEST(Lir, AWidenedWeightIsABufferOfItsOwn) {
  Graph g = parse_graph(R"(graph @g(%x: f32[2,5,8]) params(%w: f16[8,8], %b: f16[8]) {
  %wf = convert(%w) {dtype = f32} : f32[8,8]
  %bf = convert(%b) {dtype = f32} : f32[8]
  %y = dot_general(%x, %wf) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [0]} : f32[2,5,8]
  %bb = broadcast_in_dim(%bf) {dims = [2], shape = [2, 5, 8]} : f32[2,5,8]
  %a = add(%y, %bb) : f32[2,5,8]
  return %a
}
)");
  g.weights["w"] = Tensor(DType::kF16, {8, 8});
  g.weights["b"] = Tensor(DType::kF16, {8});
  ir_test::SharedIrOnly target;
  Graph d = dispatch(g, target).graph;
  run_default_passes(d);
  const lir::Program p = lower_to_lir(d, {});
  int widenings = 0;
  for (const auto& k : p.kernels) {
    const auto* l = std::get_if<lir::LoopKernel>(&k);
    if (!l) continue;
    bool constants_only = true;
    for (const auto& e : l->exprs)
      if (e.kind == lir::ExprKind::kLoad)
        constants_only = constants_only &&
                         p.buffers[p.storage_of(e.load.buffer)].kind == lir::BufferKind::kConstant;
    if (constants_only) {
      ++widenings;
      continue;
    }
    // The add: every buffer it loads is f32 (the product's result and the widened bias).
    for (const auto& e : l->exprs)
      if (e.kind == lir::ExprKind::kLoad)
        EXPECT_EQ(dtype_name(p.buffers[e.load.buffer].dtype), std::string("f32"))
            << p.buffers[e.load.buffer].name;
  }
  EXPECT_EQ(widenings, 2);
}

// A sum of 1080 x 1920 x 3 floats into one is two kernels: 1920 partial sums (the 1920 dim made
// parallel), then their sum; a reduction with many outputs, a short one, and a 16-bit result
// (whose partials would round once more) stay one kernel.
TEST(Lir, LongReductionsIntoFewOutputsAreSplitIntoPartials) {
  auto p = lower(R"(graph @g(%x: f32[1080,1920,3], %h: f16[256,300]) {
  %s = reduce_sum(%x) {axes = [0, 1, 2]} : f32[]
  %r = reduce_sum(%x) {axes = [2]} : f32[1080,1920]
  %t = reduce_max(%h) {axes = [1]} : f16[256]
  %u = reduce_sum(%h) {axes = [0, 1]} : f16[]
  return %s, %r, %t, %u
}
)");
  ASSERT_EQ(p.kernels.size(), 5u);
  const auto& partials = std::get<lir::LoopKernel>(p.kernels[0]);
  const auto& combine = std::get<lir::LoopKernel>(p.kernels[1]);
  EXPECT_EQ(partials.domain, (std::vector<int64_t>{1920, 1080, 1, 3}));
  EXPECT_EQ(partials.num_parallel, 1);
  EXPECT_EQ(partials.exprs[0].load.strides, (std::vector<int64_t>{3, 5760, 3, 1}));
  EXPECT_EQ(combine.domain, (std::vector<int64_t>{1920}));
  EXPECT_EQ(combine.num_parallel, 0);
  EXPECT_EQ(p.buffers[partials.stores[0].buffer].shape, (std::vector<int64_t>{1920}));
}

// A rotary embedding: both halves of x, read through slices of the transposed heads (each half
// twice), rotated and concatenated. The concat computes both chains itself, every load guarded by
// its half's range, so the whole rotation is one kernel reading x, cos and sin.
TEST(Lir, AFloatConcatComputesItsOperandsChainsUnderItsGuards) {
  auto p = lower(R"(graph @g(%x: f32[1,3,2,8], %c: f32[1,1,1,4], %s: f32[1,1,1,4]) {
  %t = transpose(%x) {perm = [0, 2, 1, 3]} : f32[1,2,3,8]
  %x1 = slice(%t) {limit = [1, 2, 3, 4], start = [0, 0, 0, 0], strides = [1, 1, 1, 1]} : f32[1,2,3,4]
  %x2 = slice(%t) {limit = [1, 2, 3, 8], start = [0, 0, 0, 4], strides = [1, 1, 1, 1]} : f32[1,2,3,4]
  %cb = broadcast_in_dim(%c) {dims = [0, 1, 2, 3], shape = [1, 2, 3, 4]} : f32[1,2,3,4]
  %sb = broadcast_in_dim(%s) {dims = [0, 1, 2, 3], shape = [1, 2, 3, 4]} : f32[1,2,3,4]
  %a = mul(%x1, %cb) : f32[1,2,3,4]
  %b = mul(%x2, %sb) : f32[1,2,3,4]
  %lo = sub(%a, %b) : f32[1,2,3,4]
  %d = mul(%x2, %cb) : f32[1,2,3,4]
  %e = mul(%x1, %sb) : f32[1,2,3,4]
  %hi = add(%d, %e) : f32[1,2,3,4]
  %y = concat(%lo, %hi) {axis = 3} : f32[1,2,3,8]
  return %y
}
)");
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_NE(k.name.find("concat_sub_mul"), std::string::npos) << k.name;
  EXPECT_EQ(buffers_per_kernel(p), (std::vector<size_t>{4}));  // x, cos, sin and y
  // Every load sits under the range of its operand along axis 3: [0, 4) or [4, 8).
  int lo = 0, hi = 0;
  for (const lir::Expr& e : k.exprs) {
    if (e.kind != lir::ExprKind::kLoad) continue;
    ASSERT_EQ(e.load.guards.size(), 1u);
    EXPECT_EQ(e.load.guards[0].dim, 3);
    (e.load.guards[0].lo == 0 ? lo : hi) += 1;
    EXPECT_EQ(e.load.guards[0].hi - e.load.guards[0].lo, 4);
  }
  EXPECT_EQ(lo, 4);  // x1, cos, x2, sin for the low half
  EXPECT_EQ(hi, 4);
}

// A concat read only by a convert (AMP narrowing a rotary embedding for the attention) is
// computed in the convert's kernel, which stores the narrow values: one kernel, no wide copy.
TEST(Lir, AConcatReadOnlyByAConvertIsComputedInTheConvertsKernel) {
  auto p = lower(R"(graph @g(%x: f32[2,8], %c: f32[2,4]) {
  %x1 = slice(%x) {limit = [2, 4], start = [0, 0], strides = [1, 1]} : f32[2,4]
  %x2 = slice(%x) {limit = [2, 8], start = [0, 4], strides = [1, 1]} : f32[2,4]
  %lo = mul(%x1, %c) : f32[2,4]
  %hi = sub(%x2, %c) : f32[2,4]
  %y = concat(%lo, %hi) {axis = 1} : f32[2,8]
  %h = convert(%y) {dtype = f16} : f16[2,8]
  return %h
}
)");
  ASSERT_EQ(p.kernels.size(), 1u);
  const auto& k = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_NE(k.name.find("convert_concat_mul"), std::string::npos) << k.name;
  EXPECT_EQ(p.buffers[k.stores[0].buffer].dtype, DType::kF16);
  EXPECT_EQ(buffers_per_kernel(p), (std::vector<size_t>{3}));  // x, c and h
}

// An integer concat reads its operands from buffers: computing the other operands' integer
// arithmetic on guarded zeros could divide by zero.
TEST(Lir, AnIntegerConcatKeepsItsOperandsKernels) {
  auto p = lower(R"(graph @g(%x: i32[4], %y: i32[4]) {
  %a = div(%x, %y) : i32[4]
  %b = add(%x, %y) : i32[4]
  %z = concat(%a, %b) {axis = 0} : i32[8]
  return %z
}
)");
  EXPECT_EQ(p.kernels.size(), 3u);
}

// A reshape that merges dims reads its operand as a buffer (row r, column c of [8, 8] is
// element 8r + c: not affine in the merged index).
TEST(Lir, ReshapeIsAnAliasAndTheArenaReusesDeadBuffers) {
  auto p = lower(R"(graph @g(%x: f32[8,8]) {
  %a = exp(%x) : f32[8,8]
  %a2 = mul(%a, %a) : f32[8,8]
  %r = reshape(%a2) {shape = [64]} : f32[64]
  %b = log(%r) : f32[64]
  %b2 = mul(%b, %b) : f32[64]
  %c = sqrt(%b2) : f32[64]
  %c2 = mul(%c, %c) : f32[64]
  %y = neg(%c2) : f32[64]
  return %y
}
)");
  int aliases = 0;
  for (auto& b : p.buffers) aliases += b.kind == lir::BufferKind::kAlias;
  EXPECT_EQ(aliases, 1);
  // Temporaries: a, a2, b, b2(inlined? no: used twice), c, c2 ... at most two live at once.
  EXPECT_LE(p.arena_bytes, 2 * 256);
}

// A reshape that only splits dims (and adds size-1 ones) is an index map: the chain before it
// fuses into the kernel after it, read through the composed strides, with no alias.
TEST(Lir, SplittingReshapeComposesIntoLoads) {
  auto p = lower(R"(graph @g(%x: f32[64]) {
  %a = exp(%x) : f32[64]
  %r = reshape(%a) {shape = [1, 8, 8]} : f32[1,8,8]
  %t = transpose(%r) {perm = [0, 2, 1]} : f32[1,8,8]
  %y = neg(%t) : f32[1,8,8]
  return %y
}
)");
  ASSERT_EQ(p.kernels.size(), 1u);
  for (auto& b : p.buffers) EXPECT_NE(b.kind, lir::BufferKind::kAlias);
  const auto& k = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_EQ(k.exprs[0].load.strides, (std::vector<int64_t>{0, 1, 8}));
}

// A slice of a fused product's output split into heads and transposed for a library call: one
// copy (the slice, reshape and transpose composed), not a copy of the slice and another of the
// transpose. A reshape of a buffer stays an alias.
TEST(Lir, SliceReshapeTransposeBeforeACallIsOneCopy) {
  auto p = lower(R"(graph @g(%x: f32[1,96], %w: f32[3,8]) {
  %s = slice(%x) {limit = [1, 96], start = [0, 64], strides = [1, 1]} : f32[1,32]
  %r = reshape(%s) {shape = [1, 4, 8]} : f32[1,4,8]
  %t = transpose(%r) {perm = [1, 0, 2]} : f32[4,1,8]
  %y = dot_general(%t, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [1]} : f32[4,1,3]
  %x2 = reshape(%x) {shape = [2, 48]} : f32[2,48]
  %z = dot_general(%x2, %x2) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : f32[2,2]
  return %y, %z
}
)");
  ASSERT_EQ(loops(p), 1);
  const auto& copy = std::get<lir::LoopKernel>(p.kernels[0]);
  EXPECT_EQ(copy.domain, (std::vector<int64_t>{4, 1, 8}));
  EXPECT_EQ(copy.exprs[0].load.offset, 64);
  EXPECT_EQ(copy.exprs[0].load.strides, (std::vector<int64_t>{8, 0, 1}));
  int aliases = 0;
  for (auto& b : p.buffers) aliases += b.kind == lir::BufferKind::kAlias;
  EXPECT_EQ(aliases, 1);
}

// plan_arena is plan_buffers' plan for other lifetimes: a buffer written early (by a fused
// kernel, before its own first use) no longer takes the memory of one still read then.
TEST(Lir, PlanArenaWithAnEarlierStartKeepsBuffersApart) {
  lir::Program p;
  for (int32_t i = 0; i < 3; ++i) {
    lir::Buffer b;
    b.id = i;
    b.shape = {16};
    p.buffers.push_back(b);
  }
  p.buffers[0].first_use = 0, p.buffers[0].last_use = 0;  // read by kernel 0 only
  p.buffers[1].first_use = 1, p.buffers[1].last_use = 2;  // written by kernel 1
  p.buffers[2].first_use = 2, p.buffers[2].last_use = 3;
  lir::plan_buffers(p);
  EXPECT_EQ(p.buffers[1].arena_offset, p.buffers[0].arena_offset);  // b0 is dead by kernel 1
  EXPECT_EQ(p.arena_bytes, 128);

  int64_t bytes = 0;
  std::vector<int64_t> same = lir::plan_arena(p, {0, 1, 2}, &bytes);
  EXPECT_EQ(same, (std::vector<int64_t>{p.buffers[0].arena_offset, p.buffers[1].arena_offset,
                                        p.buffers[2].arena_offset}));
  EXPECT_EQ(bytes, p.arena_bytes);
  // Kernel 0 writes b1 as its epilogue: b1 may not share b0's memory, which kernel 0 reads.
  std::vector<int64_t> early = lir::plan_arena(p, {0, 0, 2}, &bytes);
  EXPECT_NE(early[1], early[0]);
  EXPECT_EQ(early[2], early[0]);  // b0 is dead by kernel 2 either way
  EXPECT_EQ(bytes, 128);
}

// y = neg(neg(...neg(x))) with `n` negations: one fused chain.
std::string neg_chain(int n) {
  std::string text = "graph @g(%x: f32[16]) {\n";
  for (int i = 0; i < n; ++i)
    text += "  %v" + std::to_string(i) + " = neg(" + (i ? "%v" + std::to_string(i - 1) : "%x") +
            ") : f32[16]\n";
  return text + "  return %v" + std::to_string(n - 1) + "\n}\n";
}

// Each kernel's expressions: its loads, constants and ops.
std::vector<size_t> exprs_per_kernel(const lir::Program& p) {
  std::vector<size_t> out;
  for (auto& k : p.kernels) out.push_back(std::get<lir::LoopKernel>(k).exprs.size());
  return out;
}

// A long chain is cut into kernels of at most `max_ops_per_kernel` expressions (an optimising C
// compiler takes minutes over one function of thousands), and none of its ops is lost.
TEST(Lir, LongFusionChainsAreCutAtTheOpsPerKernelLimit) {
  const std::string chain = neg_chain(1000);
  EXPECT_EQ(exprs_per_kernel(lower(chain.c_str(), LoweringOptions{0, 0})),
            (std::vector<size_t>{1001}));  // unlimited: one load and 1000 negations
  for (uint32_t cap : {2u, 3u, 64u, 256u}) {
    std::vector<size_t> sizes = exprs_per_kernel(lower(chain.c_str(), LoweringOptions{0, cap}));
    size_t negations = 0;
    for (size_t s : sizes) {
      EXPECT_LE(s, cap) << "cap " << cap;
      negations += s - 1;  // every kernel loads the previous one's buffer (or x) once
    }
    EXPECT_EQ(negations, 1000u) << "cap " << cap;
    // Cut greedily: every kernel but the last is full.
    EXPECT_EQ(sizes.size(), (1000 + cap - 2) / (cap - 1)) << "cap " << cap;
  }
  // The default keeps short chains whole and cuts long ones.
  EXPECT_EQ(exprs_per_kernel(lower(neg_chain(100).c_str())), (std::vector<size_t>{101}));
  for (size_t s : exprs_per_kernel(lower(chain.c_str()))) EXPECT_LE(s, kDefaultMaxOpsPerKernel);
}

// A tree (not a chain) is cut at its largest operand first, and a binary op's two loads count.
TEST(Lir, TheOpsLimitCutsTheLargestOperand) {
  auto p = lower(R"(graph @g(%x: f32[4], %y: f32[4]) {
  %a = neg(%x) : f32[4]
  %b = exp(%a) : f32[4]
  %c = log(%b) : f32[4]
  %d = neg(%y) : f32[4]
  %e = add(%c, %d) : f32[4]
  return %e
}
)",
                 LoweringOptions{0, 5});
  // The whole tree is 7 expressions (two loads, five ops): neg-exp-log becomes its own kernel of
  // 4, then add(load c, neg(load y)) is 4.
  EXPECT_EQ(exprs_per_kernel(p), (std::vector<size_t>{4, 4}));
}

}  // namespace
}  // namespace rlx
