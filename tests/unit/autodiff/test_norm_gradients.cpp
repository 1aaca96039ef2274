// The gradient rules of LayerNorm, RMSNorm and Softmax and their backward ops
// (LayerNormBackward, RMSNormBackward, SoftmaxBackward): the rules against central finite
// differences in f64, both with the cpu's native backward kernels and with the backward ops
// forced through their MIR decompositions (the path every other target takes); the native
// kernels against the decompositions on larger shapes in f32 and f64; shape errors.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "backward_test_support.h"
#include "test_support.h"

namespace rlx {
namespace {

using Ins = std::vector<ValueId>;
using test::cpu_decomposing;
using test::random_tensor;
using Build = std::function<ValueId(GraphBuilder&, const Ins&)>;

struct Case {
  std::string name;
  std::vector<std::vector<int64_t>> inputs;  // f64, uniform in [-1, 1)
  Build build;
  std::string backward_op;  // the backward op the rule must emit
};

// loss = sum(op(inputs) * w) for a fixed random w (a constant cotangent would make Softmax's
// and an unscaled LayerNorm's input gradients vanish), differentiated by the rule and checked
// element by element against central differences of the loss, on `target`.
void check_against_finite_differences(const Case& c, std::shared_ptr<Target> target,
                                      LoweringPath backward_path) {
  SCOPED_TRACE(c.name);
  std::mt19937 rng(2024);
  Graph g;
  GraphBuilder b(g);
  Ins ins;
  NamedTensors feed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    ins.push_back(b.input(name, {DType::kF64, Shape(c.inputs[i].begin(), c.inputs[i].end())}));
    feed[name] = random_tensor(DType::kF64, c.inputs[i], -1.0, 1.0, rng);
  }
  const ValueId y = c.build(b, ins);
  const ValueId w =
      b.constant(random_tensor(DType::kF64, static_dims(b.type(y).shape), 0.5, 1.5, rng));
  IntList axes;
  for (int64_t a = 0; a < b.type(y).rank(); ++a) axes.push_back(a);
  const ValueId loss = b.reduce(b.mul(y, w), axes, ReduceKind::kSum);
  g.values[loss].name = "loss";
  g.outputs.push_back(loss);
  test::expect_rule_matches_finite_differences(std::move(g), feed, std::move(target), c.backward_op,
                                               backward_path);
}

Build layer_norm(double eps) {
  return [eps](GraphBuilder& b, const Ins& x) { return b.op("LayerNorm", x, {{"epsilon", eps}}); };
}
Build rms_norm(double eps) {
  return [eps](GraphBuilder& b, const Ins& x) { return b.op("RMSNorm", x, {{"epsilon", eps}}); };
}
Build softmax(int64_t axis) {
  return [axis](GraphBuilder& b, const Ins& x) { return b.op("Softmax", x, {{"axis", axis}}); };
}

std::vector<Case> cases() {
  return {
      {"LayerNorm, scale and bias over two leading dims",
       {{2, 3, 5}, {5}, {5}},
       layer_norm(1e-5),
       "LayerNormBackward"},
      {"LayerNorm, no scale or bias", {{4, 6}}, layer_norm(1e-5), "LayerNormBackward"},
      // A large epsilon weighs in the derivative (rstd = (var + eps)^-1/2).
      {"LayerNorm, scale only, epsilon 0.5", {{3, 4}, {4}}, layer_norm(0.5), "LayerNormBackward"},
      {"LayerNorm, rank 1", {{7}, {7}, {7}}, layer_norm(1e-5), "LayerNormBackward"},
      {"LayerNorm, [1] scale and bias broadcast",
       {{3, 4}, {1}, {1}},
       layer_norm(1e-5),
       "LayerNormBackward"},
      {"RMSNorm, scale over two leading dims", {{2, 3, 5}, {5}}, rms_norm(1e-6), "RMSNormBackward"},
      {"RMSNorm, no scale, epsilon 0.5", {{4, 6}}, rms_norm(0.5), "RMSNormBackward"},
      {"RMSNorm, [1] scale", {{3, 4}, {1}}, rms_norm(1e-6), "RMSNormBackward"},
      {"Softmax, last axis", {{3, 5}}, softmax(-1), "SoftmaxBackward"},
      {"Softmax, a middle axis", {{2, 3, 4}}, softmax(1), "SoftmaxBackward"},
      {"Softmax, axis 0", {{4, 3}}, softmax(0), "SoftmaxBackward"},
  };
}

// Every case has a native cpu claim except the [1] scale, which the kernels refuse.
LoweringPath native_path(const Case& c) {
  for (size_t i = 1; i < c.inputs.size(); ++i)
    if (c.inputs[i] == std::vector<int64_t>{1}) return LoweringPath::kSharedIr;
  return LoweringPath::kNative;
}

TEST(NormGradients, RulesMatchFiniteDifferencesWithNativeKernels) {
  for (const Case& c : cases())
    check_against_finite_differences(c, test::cpu_target(), native_path(c));
}

TEST(NormGradients, RulesMatchFiniteDifferencesThroughDecompositions) {
  for (const Case& c : cases())
    check_against_finite_differences(c, cpu_decomposing(), LoweringPath::kSharedIr);
}

// One backward op alone, its inputs given: the same graph compiled with the cpu's kernel and
// with the decomposition forced, on shapes whose rows split into several partial-sum blocks.
struct KernelCase {
  std::string op;
  std::vector<int64_t> x;
  bool scale;
  Attrs attrs;
};

Graph backward_graph(const KernelCase& c, DType d) {
  Graph g;
  GraphBuilder b(g);
  const TensorType xt{d, Shape(c.x.begin(), c.x.end())};
  Ins ins = {b.input("x", xt)};
  if (c.scale) ins.push_back(b.input("scale", {d, {xt.shape.back()}}));
  ins.push_back(b.input("dy", xt));
  const Ins outs = b.op_n(c.op, ins, c.attrs);
  for (size_t k = 0; k < outs.size(); ++k) {
    g.values[outs[k]].name = "out" + std::to_string(k);
    g.outputs.push_back(outs[k]);
  }
  return g;
}

// f64 values (the check rounds them to the dtype of each run).
NamedTensors backward_inputs(const KernelCase& c) {
  std::mt19937 rng(99);
  NamedTensors in;
  // SoftmaxBackward's y: positive, as a softmax's result is (the formula holds for any y).
  const bool softmax = c.op == "SoftmaxBackward";
  in["x"] = random_tensor(DType::kF64, c.x, softmax ? 0.0 : -2.0, softmax ? 1.0 : 3.0, rng);
  if (c.scale) in["scale"] = random_tensor(DType::kF64, {c.x.back()}, 0.5, 1.5, rng);
  in["dy"] = random_tensor(DType::kF64, c.x, -1.0, 1.0, rng);
  return in;
}

std::vector<KernelCase> kernel_cases() {
  const Attrs eps5{{"epsilon", 1e-5}}, eps6{{"epsilon", 1e-6}};
  return {
      {"LayerNormBackward", {64, 384}, true, eps5},
      {"LayerNormBackward", {4, 1000, 64}, true, eps5},  // 4000 rows: 8 blocks, the last short
      {"LayerNormBackward", {37, 33}, false, {{"epsilon", 0.1}}},  // tails of every lane loop
      {"LayerNormBackward", {5}, true, eps5},
      {"RMSNormBackward", {3, 130, 96}, true, eps6},
      {"RMSNormBackward", {17, 7}, false, eps6},
      {"SoftmaxBackward", {40, 200}, false, {{"axis", int64_t{-1}}}},
      {"SoftmaxBackward", {3, 50, 9}, false, {{"axis", int64_t{1}}}},
      {"SoftmaxBackward", {6, 5}, false, {{"axis", int64_t{0}}}},
  };
}

// dscale and dbias are partial sums combined in a fixed order: the same bits on every run.
TEST(NormGradients, NativeKernelsAgreeWithDecompositions) {
  for (DType d : {DType::kF64, DType::kF32}) {
    for (const KernelCase& c : kernel_cases()) {
      SCOPED_TRACE(fmt::format("{} {} x{}", c.op, dtype_name(d), c.x.size()));
      ASSERT_NO_FATAL_FAILURE(test::expect_native_agrees_with_decomposition(
          [&c](DType dt) { return backward_graph(c, dt); }, c.op, backward_inputs(c), d, c.op));
    }
  }
}

// A model with all three ops between its parameters and the loss, trained one SGD step: the
// training graph keeps them whole with their backward ops, and the step moves each parameter by
// lr times the loss's central difference (f64; the backward ops native on the cpu).
TEST(NormGradients, ATrainingStepMovesParametersByTheGradient) {
  std::mt19937 rng(31);
  Graph model;
  GraphBuilder b(model);
  const ValueId x = b.input("x", {DType::kF64, {5, 6}});
  const ValueId t = b.input("t", {DType::kF64, {5, 4}});
  const std::vector<std::pair<std::string, std::vector<int64_t>>> params = {
      {"w", {4, 6}}, {"ln_scale", {4}}, {"ln_bias", {4}}, {"rms_scale", {4}}};
  Ins p;
  for (const auto& [name, shape] : params)
    p.push_back(b.param(name, random_tensor(DType::kF64, shape, 0.5, 1.5, rng)));
  const ValueId h = b.op("LayerNorm", {b.op("Linear", {x, p[0]}), p[1], p[2]});
  const ValueId y = b.op("Softmax", {b.op("RMSNorm", {h, p[3]})}, {{"axis", int64_t{0}}});
  const ValueId loss = b.reduce(b.mul(y, t), {0, 1}, ReduceKind::kSum);
  model.values[loss].name = "loss";
  model.outputs.push_back(loss);

  const NamedTensors batch = {{"x", random_tensor(DType::kF64, {5, 6}, -1, 1, rng)},
                              {"t", random_tensor(DType::kF64, {5, 4}, -1, 1, rng)}};
  test::expect_sgd_step_follows_gradient(model, batch,
                                         {"LayerNorm", "RMSNorm", "Softmax", "LayerNormBackward",
                                          "RMSNormBackward", "SoftmaxBackward"});
}

std::string infer_error(const std::string& op, const std::vector<TensorType>& in,
                        Attrs attrs = {}) {
  Graph g;
  GraphBuilder b(g);
  Ins ins;
  for (const TensorType& t : in) ins.push_back(b.input("in" + std::to_string(ins.size()), t));
  try {
    b.op_n(op, ins, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NormGradients, BackwardOpsReportShapeErrorsByName) {
  const TensorType x{DType::kF32, {2, 3}};
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.find(part) != std::string::npos;
  };
  std::string e = infer_error("LayerNormBackward", {x, {DType::kF32, {4}}, x});
  EXPECT_TRUE(has(e, "LayerNormBackward: scale must be f32[3] (or [1], broadcast)")) << e;
  e = infer_error("RMSNormBackward", {x, {DType::kF32, {3, 2}}});
  EXPECT_TRUE(has(e, "RMSNormBackward: dy must be f32[2,3] (x's type), got f32[3,2]")) << e;
  e = infer_error("LayerNormBackward", {{DType::kI32, {2, 3}}, {DType::kI32, {2, 3}}});
  EXPECT_TRUE(has(e, "LayerNormBackward needs a floating-point x")) << e;
  e = infer_error("LayerNormBackward", {{DType::kF32, {Dim::symbol("B"), Dim::symbol("D")}},
                                        {DType::kF32, {Dim::symbol("B"), Dim::symbol("D")}}});
  EXPECT_TRUE(has(e, "the normalised (last) dim of x must be static")) << e;
  e = infer_error("RMSNormBackward", {x, x}, {{"epsilon", -1.0}});
  EXPECT_TRUE(has(e, "epsilon must be a number >= 0")) << e;
  e = infer_error("SoftmaxBackward", {x, x}, {{"axis", int64_t{2}}});
  EXPECT_TRUE(has(e, "axis 2 is out of range for rank 2")) << e;
  e = infer_error("SoftmaxBackward", {x, {DType::kF64, {2, 3}}});
  EXPECT_TRUE(has(e, "SoftmaxBackward: dy must be f32[2,3]")) << e;
  // Symbolic leading dims are fine: dscale and dbias are [D] whatever they are.
  EXPECT_EQ(infer_error("LayerNormBackward", {{DType::kF32, {Dim::symbol("B"), 3}},
                                              {DType::kF32, {3}},
                                              {DType::kF32, {Dim::symbol("B"), 3}}}),
            "");
}

}  // namespace
}  // namespace rlx
