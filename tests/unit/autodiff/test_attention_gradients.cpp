// Attention's gradient rule and its backward op (AttentionBackward): the rule against central
// finite differences in f64 on both the cpu's native kernel and the backward op forced through
// its MIR decomposition, over every mask form, grouped kv heads, Sq != Sk (including causal
// queries before the first key and an all-padding batch row, which see no key), a given scale,
// and a value dim unlike the key dim; the kernel against the decomposition on larger shapes in
// f32 and f64; a Trainer step through Attention; shape errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>

#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "backward_test_support.h"
#include "test_support.h"

namespace rlx {
namespace {

using Ins = std::vector<ValueId>;
using test::converted;
using test::cpu_decomposing;
using test::random_tensor;

struct Case {
  std::string name;
  int64_t batch, heads, kv_heads, q_len, kv_len, dim, v_dim;
  std::string mask;             // none | causal | padding
  std::vector<int64_t> keep;    // padding: [batch, kv_len] of 0/1
  std::optional<double> scale;  // absent: 1/sqrt(dim)
};

Attrs attrs_of(const Case& c) {
  Attrs a{{"mask", c.mask}};
  if (c.scale) a["scale"] = *c.scale;
  return a;
}

Tensor keep_tensor(const Case& c) {
  Tensor t(DType::kI64, {c.batch, c.kv_len});
  std::copy(c.keep.begin(), c.keep.end(), t.as<int64_t>());
  return t;
}

std::vector<std::vector<int64_t>> qkv_shapes(const Case& c) {
  return {{c.batch, c.heads, c.q_len, c.dim},
          {c.batch, c.kv_heads, c.kv_len, c.dim},
          {c.batch, c.kv_heads, c.kv_len, c.v_dim}};
}

std::vector<Case> cases() {
  return {
      {"no mask", 2, 2, 2, 3, 3, 4, 4, "none", {}, std::nullopt},
      {"causal, 4 query heads on 2 kv heads, Dv 5",
       1,
       4,
       2,
       4,
       4,
       3,
       5,
       "causal",
       {},
       std::nullopt},
      {"causal, Sq 2 < Sk 5 (decoding)", 1, 2, 1, 2, 5, 4, 4, "causal", {}, std::nullopt},
      // Queries 0 and 1 come before the first key: they see none and average V.
      {"causal, Sq 5 > Sk 3", 1, 2, 2, 5, 3, 4, 3, "causal", {}, std::nullopt},
      // Batch row 1 is all padding: every query of it sees no key.
      {"padding, one row all padded, scale 0.7",
       2,
       2,
       1,
       3,
       5,
       4,
       4,
       "padding",
       {1, 1, 0, 1, 0, 0, 0, 0, 0, 0},
       0.7},
  };
}

// loss = sum(Attention(q, k, v) * w) for a fixed random w, differentiated by the rule on
// `target` and checked element by element against central differences of the loss.
void check_against_finite_differences(const Case& c, std::shared_ptr<Target> target,
                                      LoweringPath backward_path) {
  SCOPED_TRACE(c.name);
  std::mt19937 rng(2025);
  Graph g;
  GraphBuilder b(g);
  Ins ins;
  NamedTensors feed;
  const auto shapes = qkv_shapes(c);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    ins.push_back(b.input(name, {DType::kF64, Shape(shapes[i].begin(), shapes[i].end())}));
    feed[name] = random_tensor(DType::kF64, shapes[i], -1.5, 1.5, rng);
  }
  Ins args = ins;
  if (c.mask == "padding") args.push_back(b.constant(keep_tensor(c)));
  const ValueId y = b.op("Attention", args, attrs_of(c));
  const ValueId w =
      b.constant(random_tensor(DType::kF64, static_dims(b.type(y).shape), 0.5, 1.5, rng));
  const ValueId loss = b.reduce(b.mul(y, w), {0, 1, 2, 3}, ReduceKind::kSum);
  g.values[loss].name = "loss";
  g.outputs.push_back(loss);
  test::expect_rule_matches_finite_differences(std::move(g), feed, std::move(target),
                                               "AttentionBackward", backward_path);
}

TEST(AttentionGradients, RuleMatchesFiniteDifferencesWithTheNativeKernel) {
  for (const Case& c : cases())
    check_against_finite_differences(c, test::cpu_target(), LoweringPath::kNative);
}

TEST(AttentionGradients, RuleMatchesFiniteDifferencesThroughTheDecomposition) {
  for (const Case& c : cases())
    check_against_finite_differences(c, cpu_decomposing(), LoweringPath::kSharedIr);
}

// A row that sees no key averages V: its dv share is dO / Sk on every key and dq is 0, by hand.
TEST(AttentionGradients, ARowWithNoVisibleKeyAveragesV) {
  for (auto target : {test::cpu_target(), cpu_decomposing()}) {
    Graph g;
    GraphBuilder b(g);
    const TensorType t{DType::kF64, {1, 1, 1, 2}}, kv{DType::kF64, {1, 1, 4, 2}};
    const ValueId q = b.input("q", t), k = b.input("k", kv), v = b.input("v", kv);
    const ValueId m = b.constant(Tensor(DType::kI64, {1, 4}));  // zeros: every key padded
    const ValueId dout = b.input("dout", t);
    const Ins outs = b.op_n("AttentionBackward", {q, k, v, m, dout}, {{"mask", "padding"}});
    for (size_t i = 0; i < outs.size(); ++i) {
      g.values[outs[i]].name = "d" + std::to_string(i);
      g.outputs.push_back(outs[i]);
    }
    std::mt19937 rng(5);
    NamedTensors feed = {{"q", random_tensor(DType::kF64, {1, 1, 1, 2}, -1, 1, rng)},
                         {"k", random_tensor(DType::kF64, {1, 1, 4, 2}, -1, 1, rng)},
                         {"v", random_tensor(DType::kF64, {1, 1, 4, 2}, -1, 1, rng)},
                         {"dout", random_tensor(DType::kF64, {1, 1, 1, 2}, -1, 1, rng)}};
    Session session(target);
    const NamedTensors out = session.compile(g).run(feed);
    for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(out.at("d0").scalar_at(i), 0.0);
    for (int64_t i = 0; i < 8; ++i) {
      EXPECT_EQ(out.at("d1").scalar_at(i), 0.0);
      EXPECT_NEAR(out.at("d2").scalar_at(i), feed.at("dout").scalar_at(i % 2) / 4, 1e-15);
    }
  }
}

Graph backward_graph(const Case& c, DType d) {
  Graph g;
  GraphBuilder b(g);
  const auto shapes = qkv_shapes(c);
  Ins ins;
  const char* names[] = {"q", "k", "v"};
  for (size_t i = 0; i < 3; ++i)
    ins.push_back(b.input(names[i], {d, Shape(shapes[i].begin(), shapes[i].end())}));
  if (c.mask == "padding") ins.push_back(b.constant(keep_tensor(c)));
  ins.push_back(b.input("dout", {d, {c.batch, c.heads, c.q_len, c.v_dim}}));
  const Ins outs = b.op_n("AttentionBackward", ins, attrs_of(c));
  for (size_t k = 0; k < outs.size(); ++k) {
    g.values[outs[k]].name = "out" + std::to_string(k);
    g.outputs.push_back(outs[k]);
  }
  return g;
}

std::vector<Case> kernel_cases() {
  std::vector<int64_t> keep(3 * 40, 1);
  for (int64_t j = 25; j < 40; ++j) keep[j] = 0;         // batch 0: a padded tail
  for (int64_t j = 0; j < 40; j += 3) keep[40 + j] = 0;  // batch 1: holes
  std::fill(keep.begin() + 80, keep.end(), 0);           // batch 2: all padding
  return {
      {"causal 33x33, grouped", 2, 4, 2, 33, 33, 16, 16, "causal", {}, std::nullopt},
      {"padding 20x40", 3, 2, 2, 20, 40, 8, 8, "padding", keep, std::nullopt},
      {"none 7x50, Dv 24, grouped by 3", 1, 6, 2, 7, 50, 12, 24, "none", {}, 0.3},
      {"causal 9x4", 2, 2, 1, 9, 4, 5, 5, "causal", {}, std::nullopt},
  };
}

// dk and dv are summed by one task per kv head in a fixed order: the same bits on every run.
TEST(AttentionGradients, NativeKernelAgreesWithTheDecomposition) {
  for (DType d : {DType::kF64, DType::kF32}) {
    for (const Case& c : kernel_cases()) {
      SCOPED_TRACE(fmt::format("{} {}", c.name, dtype_name(d)));
      std::mt19937 rng(99);
      NamedTensors in;
      const auto shapes = qkv_shapes(c);
      in["q"] = random_tensor(DType::kF64, shapes[0], -2, 2, rng);
      in["k"] = random_tensor(DType::kF64, shapes[1], -2, 2, rng);
      in["v"] = random_tensor(DType::kF64, shapes[2], -1, 1, rng);
      in["dout"] = random_tensor(DType::kF64, {c.batch, c.heads, c.q_len, c.v_dim}, -1, 1, rng);
      ASSERT_NO_FATAL_FAILURE(test::expect_native_agrees_with_decomposition(
          [&c](DType dt) { return backward_graph(c, dt); }, "AttentionBackward", in, d, c.name));
    }
  }
}

// A self-attention layer (2 query heads on 1 kv head, causal) trained one SGD step: the training
// graph keeps Attention whole with AttentionBackward, and the step moves each parameter by lr
// times the loss's central difference (f64, the backward op native on the cpu).
TEST(AttentionGradients, ATrainingStepMovesParametersByTheGradient) {
  std::mt19937 rng(31);
  Graph model;
  GraphBuilder b(model);
  const ValueId x = b.input("x", {DType::kF64, {4, 6}});
  const ValueId t = b.input("t", {DType::kF64, {1, 2, 4, 3}});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> params = {
      {"wq", {6, 6}}, {"wk", {3, 6}}, {"wv", {3, 6}}};
  Ins p;
  for (const auto& [name, shape] : params)
    p.push_back(b.param(name, random_tensor(DType::kF64, shape, -0.8, 0.8, rng)));
  const ValueId q =
      b.transpose(b.reshape(b.op("Linear", {x, p[0]}), Shape{1, 4, 2, 3}), {0, 2, 1, 3});
  const ValueId k = b.reshape(b.op("Linear", {x, p[1]}), Shape{1, 1, 4, 3});
  const ValueId v = b.reshape(b.op("Linear", {x, p[2]}), Shape{1, 1, 4, 3});
  const ValueId y = b.op("Attention", {q, k, v}, {{"mask", "causal"}});
  const ValueId loss = b.reduce(b.mul(y, t), {0, 1, 2, 3}, ReduceKind::kSum);
  model.values[loss].name = "loss";
  model.outputs.push_back(loss);

  const NamedTensors batch = {{"x", random_tensor(DType::kF64, {4, 6}, -1, 1, rng)},
                              {"t", random_tensor(DType::kF64, {1, 2, 4, 3}, -1, 1, rng)}};
  test::expect_sgd_step_follows_gradient(model, batch, {"Attention", "AttentionBackward"});
}

// k and v of another dtype than q (an f32 KV cache read by f64 queries): the rule converts them
// for the backward op and returns dk, dv in their own dtype, the values of the all-f64 gradient.
TEST(AttentionGradients, KAndVOfAnotherDtypeGetGradientsInTheirDtype) {
  auto grads = [](DType kv_dtype) {
    Graph g;
    GraphBuilder b(g);
    const ValueId q = b.input("q", {DType::kF64, {1, 2, 3, 4}});
    const ValueId k = b.input("k", {kv_dtype, {1, 1, 3, 4}});
    const ValueId v = b.input("v", {kv_dtype, {1, 1, 3, 4}});
    const ValueId y = b.op("Attention", {q, k, v}, {{"mask", "causal"}});
    const ValueId loss = b.reduce(b.mul(y, y), {0, 1, 2, 3}, ReduceKind::kSum);
    g.values[loss].name = "loss";
    g.outputs.push_back(loss);
    g = decompose_to_mir(g);
    const auto gs = append_gradients(g, *g.find_value("loss"),
                                     {*g.find_value("q"), *g.find_value("k"), *g.find_value("v")});
    for (size_t i = 0; i < gs.size(); ++i) {
      g.values[gs[i]].name = "g" + std::to_string(i);
      g.outputs.push_back(gs[i]);
    }
    EXPECT_EQ(g.type(gs[1]).dtype, kv_dtype);
    EXPECT_EQ(g.type(gs[2]).dtype, kv_dtype);
    std::mt19937 rng(7);
    NamedTensors feed = {{"q", random_tensor(DType::kF64, {1, 2, 3, 4}, -1, 1, rng)},
                         {"k", random_tensor(DType::kF64, {1, 1, 3, 4}, -1, 1, rng)},
                         {"v", random_tensor(DType::kF64, {1, 1, 3, 4}, -1, 1, rng)}};
    feed = converted(converted(feed, DType::kF32), DType::kF64);
    feed["k"] = converted({{"k", feed["k"]}}, kv_dtype).at("k");
    feed["v"] = converted({{"v", feed["v"]}}, kv_dtype).at("v");
    Session session(test::cpu_target());
    return converted(session.compile(g).run(feed), DType::kF64);
  };
  const NamedTensors mixed = grads(DType::kF32), exact = grads(DType::kF64);
  // Only dk and dv are rounded to f32.
  test::expect_all_close(exact, mixed, 1e-6, "f32 k, v");
}

std::string infer_error(const std::vector<TensorType>& in, Attrs attrs) {
  Graph g;
  GraphBuilder b(g);
  Ins ins;
  for (const TensorType& t : in) ins.push_back(b.input("in" + std::to_string(ins.size()), t));
  try {
    b.op_n("AttentionBackward", ins, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AttentionGradients, BackwardOpReportsShapeErrorsByName) {
  const TensorType q{DType::kF32, {1, 4, 3, 8}}, kv{DType::kF32, {1, 2, 5, 8}};
  const TensorType dout{DType::kF32, {1, 4, 3, 8}};
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
  };
  const Attrs none{{"mask", "none"}};
  EXPECT_EQ(infer_error({q, kv, kv, dout}, none), "");
  std::string e = infer_error({q, kv, kv, {DType::kF32, {1, 4, 5, 8}}}, none);
  EXPECT_TRUE(has(e, "AttentionBackward: dout must be f32[1,4,3,8] (Attention's result)")) << e;
  e = infer_error({q, {DType::kF16, {1, 2, 5, 8}}, kv, dout}, none);
  EXPECT_TRUE(has(e, "k and v must be of q's dtype f32")) << e;
  e = infer_error({q, {DType::kF32, {1, 3, 5, 8}}, {DType::kF32, {1, 3, 5, 8}}, dout}, none);
  EXPECT_TRUE(has(e, "4 query heads is not a multiple of 3 kv heads")) << e;
  e = infer_error({q, kv, kv, dout}, {{"mask", "padding"}});
  EXPECT_TRUE(has(e, "mask \"padding\" needs a mask input")) << e;
  e = infer_error({q, kv, kv, dout}, {{"mask", "sliding"}});
  EXPECT_TRUE(has(e, "mask must be \"none\", \"causal\" or \"padding\"")) << e;
  e = infer_error({q, kv, {DType::kF32, {1, 2, 4, 8}}, dout}, none);
  EXPECT_TRUE(has(e, "do not fit one attention")) << e;
}

}  // namespace
}  // namespace rlx
