// Shape/dtype inference and the verifier name the node in every message.
#include <gtest/gtest.h>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Verifier, InferenceOfTransformerOps) {
  Graph g;
  GraphBuilder b(g);
  ValueId q = b.input("q", {DType::kF32, {Dim::symbol("B"), 8, Dim::symbol("S"), 16}});
  ValueId kv = b.input("kv", {DType::kF32, {Dim::symbol("B"), 2, Dim::symbol("T"), 16}});
  ValueId o = b.op("Attention", {q, kv, kv}, {{"mask", std::string("causal")}});
  EXPECT_EQ(g.type(o).str(), "f32[B,8,S,16]");
  ValueId w = b.input("w", {DType::kF32, {32, 16}});
  EXPECT_EQ(g.type(b.op("Linear", {o, w})).str(), "f32[B,8,S,32]");
  ValueId m = b.input("m", {DType::kF32, {3, 16, 5}});
  EXPECT_EQ(g.type(b.op("MatMul", {o, b.input("r", {DType::kF32, {16, 5}})})).str(),
            "f32[B,8,S,5]");
  EXPECT_EQ(error_of([&] {
              b.op("MatMul", {o, m});
            }),
            "node %t3 (MatMul): shapes [B,8] and [3] do not broadcast (dim 1: 8 vs 3)");
}

// A KV cache kept in f16 (or bf16) is read by f32 queries: the decomposition converts k and v to
// q's dtype, so the result is q's dtype; k and v must still be floats.
TEST(Verifier, AttentionReadsKAndVOfAnotherFloatDtypeAsQs) {
  Graph g;
  GraphBuilder b(g);
  ValueId q = b.input("q", {DType::kF32, {1, 4, 1, 8}});
  ValueId k = b.input("k", {DType::kF16, {1, 2, Dim::symbol("T"), 8}});
  ValueId v = b.input("v", {DType::kBF16, {1, 2, Dim::symbol("T"), 8}});
  EXPECT_EQ(g.type(b.op("Attention", {q, k, v}, {{"mask", std::string("causal")}})).str(),
            "f32[1,4,1,8]");
  ValueId i = b.input("i", {DType::kI32, {1, 2, 3, 8}});
  EXPECT_EQ(error_of([&] {
              b.op("Attention", {q, i, v});
            }),
            "node %t1 (Attention): Attention needs floating-point k and v, got i32 and bf16");
}

TEST(Verifier, MessagesNameTheNode) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {2, 3}});
  b.set_loc("layer0/attn");
  EXPECT_EQ(error_of([&] {
              b.op("Attention", {x, x, x});
            }),
            "node %t0 (Attention 'layer0/attn'): Attention needs rank-4 q, k, v [batch, heads, "
            "seq, dim], got f32[2,3], f32[2,3], f32[2,3]");
  EXPECT_EQ(error_of([&] {
              b.op("reduce_sum", {x}, {{"axes", IntList{2}}});
            }),
            "node %t1 (reduce_sum 'layer0/attn'): axis 2 is out of range for rank 2");
  EXPECT_EQ(error_of([&] {
              b.op("transpose", {x}, {{"perm", IntList{0, 0}}});
            }),
            "node %t2 (transpose 'layer0/attn'): transpose: perm is not a permutation");
}

TEST(Verifier, EveryOpHasASampleThatInfers) {
  // Each op's sample signature is valid at least at one dtype: the legality table relies on it.
  for (const OpDef& def : OpRegistry::instance().ops()) {
    if (def.name == "while") continue;
    bool any = false;
    for (int i = 0; i < kNumDTypes; ++i) {
      auto s = def.sample(all_dtypes()[i]);
      if (!s) continue;
      Graph g;
      std::vector<ValueId> in;
      for (auto& t : s->inputs) in.push_back(g.add_input({}, t));
      int32_t n = g.add_node(def.name, in, {}, s->attrs);
      EXPECT_NO_THROW(infer_node(g, n)) << def.name << " at " << dtype_name(all_dtypes()[i]);
      any = true;
    }
    EXPECT_TRUE(any) << def.name;
  }
}

// A scalar of f32, or of an integer dtype that holds it, is one constant of that dtype: a target
// without f64 must not meet an f64 constant in a decomposition's loop regions, which are checked
// as built. Other dtypes go through f64 and one convert (its rounding and saturation).
TEST(Builder, ScalarsAreConstantsOfTheirOwnDtypeWhereTheyFit) {
  Graph g;
  GraphBuilder b(g);
  auto only_constant = [&](ValueId v, DType d) {
    const Node& n = g.nodes.at(g.values[v].producer);
    EXPECT_EQ(n.op, "constant");
    EXPECT_EQ(g.type(v).dtype, d);
    return n.attr_tensor("value");
  };
  EXPECT_EQ(only_constant(b.scalar(DType::kF32, 0.1), DType::kF32).as<float>()[0], 0.1f);
  EXPECT_EQ(only_constant(b.scalar(DType::kI32, -7), DType::kI32).as<int32_t>()[0], -7);
  EXPECT_EQ(only_constant(b.scalar(DType::kI64, 1000), DType::kI64).as<int64_t>()[0], 1000);
  EXPECT_EQ(only_constant(b.scalar(DType::kU8, 255), DType::kU8).as<uint8_t>()[0], 255);
  // 300 does not fit u8, 0.5 is no integer, f16 has its own rounding: through f64 and convert.
  for (auto [d, v] : {std::pair{DType::kU8, 300.0}, std::pair{DType::kI32, 0.5},
                      std::pair{DType::kF16, 0.1}}) {
    ValueId c = b.scalar(d, v);
    EXPECT_EQ(g.nodes.at(g.values[c].producer).op, "convert") << dtype_name(d);
    EXPECT_EQ(g.type(c).dtype, d);
  }
}

}  // namespace
}  // namespace rlx
