// Every MIR primitive's vector-Jacobian rule against central finite differences in f64, run on
// the cpu target: loss = sum(op(inputs) * w) for a fixed random w, so each rule sees a
// cotangent that is not all ones.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

using Build = std::function<ValueId(GraphBuilder&, const std::vector<ValueId>&)>;
// How an input's values are drawn: uniform in [lo, hi).
struct InputSpec {
  std::vector<int64_t> shape;
  double lo = -1.0, hi = 1.0;
};

struct Case {
  std::string name;  // the primitive under test first, then a variant
  std::vector<InputSpec> inputs;
  Build build;
  double tol = 1e-6;
  double eps = 1e-6;  // the finite difference's step
};

Tensor random_f64(const std::vector<int64_t>& shape, double lo, double hi, std::mt19937& rng) {
  Tensor t(DType::kF64, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<double>()[i] = u(rng);
  return t;
}

IntList all_axes(int64_t rank) {
  IntList a;
  for (int64_t i = 0; i < rank; ++i) a.push_back(i);
  return a;
}

void check_case(const Case& c) {
  SCOPED_TRACE(c.name);
  std::mt19937 rng(1234);
  Graph g;
  GraphBuilder b(g);
  std::vector<ValueId> ins;
  NamedTensors feed;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string name = "x" + std::to_string(i);
    Shape s(c.inputs[i].shape.begin(), c.inputs[i].shape.end());
    ins.push_back(b.input(name, {DType::kF64, s}));
    feed[name] = random_f64(c.inputs[i].shape, c.inputs[i].lo, c.inputs[i].hi, rng);
  }
  ValueId y = c.build(b, ins);
  std::vector<int64_t> yshape = static_dims(b.type(y).shape);
  ValueId w = b.constant(random_f64(yshape, 0.5, 1.5, rng));
  ValueId weighted = b.mul(y, w);
  ValueId loss = yshape.empty() ? weighted : b.reduce(weighted, all_axes((int64_t)yshape.size()), ReduceKind::kSum);
  g.values[loss].name = "loss";
  g.outputs.push_back(loss);
  std::vector<ValueId> grads = append_gradients(g, loss, ins);
  // add's two gradients are one value: each output once.
  for (ValueId v : grads)
    if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
  verify_graph(g);

  Session session(test::cpu_target());
  CompiledModel model = session.compile(g);
  NamedTensors out = model.run(feed);
  auto loss_at = [&](const NamedTensors& f) { return model.run(f).at("loss").scalar_at(0); };
  for (size_t i = 0; i < ins.size(); ++i) {
    const Tensor& analytic = out.at(g.values[grads[i]].name);
    const Tensor& x = feed.at("x" + std::to_string(i));
    ASSERT_EQ(analytic.numel(), x.numel());
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double eps = c.eps;
      NamedTensors plus = feed, minus = feed;
      plus["x" + std::to_string(i)] = x.clone();
      minus["x" + std::to_string(i)] = x.clone();
      plus["x" + std::to_string(i)].as<double>()[j] += eps;
      minus["x" + std::to_string(i)].as<double>()[j] -= eps;
      double fd = (loss_at(plus) - loss_at(minus)) / (2 * eps);
      double got = analytic.scalar_at(j);
      EXPECT_NEAR(got, fd, c.tol * std::max(1.0, std::fabs(fd)))
          << "input " << i << " element " << j;
    }
  }
}

ValueId unary_op(GraphBuilder& b, const std::string& op, ValueId x) { return b.unary(op, x); }

std::vector<Case> elementwise_cases() {
  std::vector<Case> cases;
  for (const char* op : {"neg", "abs", "exp", "tanh", "erf", "sin", "cos", "logistic", "sign",
                         "floor", "ceil", "round"}) {
    std::string o = op;
    cases.push_back({o, {{{2, 3}, -2.0, 2.0}},
                     [o](GraphBuilder& b, const std::vector<ValueId>& x) { return unary_op(b, o, x[0]); }});
  }
  for (const char* op : {"log", "sqrt", "rsqrt"}) {
    std::string o = op;
    cases.push_back({o, {{{2, 3}, 0.5, 2.0}},
                     [o](GraphBuilder& b, const std::vector<ValueId>& x) { return unary_op(b, o, x[0]); }});
  }
  for (const char* op : {"add", "sub", "mul", "max", "min"}) {
    std::string o = op;
    cases.push_back({o, {{{2, 3}}, {{2, 3}}},
                     [o](GraphBuilder& b, const std::vector<ValueId>& x) { return b.binary(o, x[0], x[1]); }});
  }
  cases.push_back({"div", {{{2, 3}}, {{2, 3}, 0.5, 2.0}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.div(x[0], x[1]); }});
  cases.push_back({"pow", {{{2, 3}, 0.5, 2.0}, {{2, 3}, -1.5, 1.5}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.binary("pow", x[0], x[1]); }});
  // a in [2.1, 2.9], b in [1.1, 1.4]: a / b stays away from an integer, where rem jumps.
  cases.push_back({"rem", {{{2, 3}, 2.1, 2.9}, {{2, 3}, 1.1, 1.4}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.binary("rem", x[0], x[1]); }});
  cases.push_back({"select", {{{2, 3}}, {{2, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     Tensor p = Tensor::from<uint8_t>(DType::kBool, {2, 3}, {1, 0, 0, 1, 1, 0});
                     return b.select(b.constant(p), x[0], x[1]);
                   }});
  cases.push_back({"convert", {{{2, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     // f64 -> f32 -> f64: the cotangent converts back on both steps. Linear, so
                     // a large step sees through f32's rounding.
                     return b.convert(b.mul(b.convert(x[0], DType::kF32), b.full_like(b.convert(x[0], DType::kF32), 3.0)), DType::kF64);
                   },
                   1e-4, 1e-2});
  return cases;
}

std::vector<Case> structural_cases() {
  std::vector<Case> cases;
  cases.push_back({"broadcast_in_dim (new leading dim)", {{{3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.broadcast_in_dim(x[0], {2, 3}, {1}); }});
  cases.push_back({"broadcast_in_dim (stretched 1)", {{{2, 1}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.broadcast_in_dim(x[0], {2, 4, 3}, {0, 2}); }});
  cases.push_back({"broadcast_in_dim (scalar)", {{{}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.broadcast_in_dim(x[0], {2, 3}, {}); }});
  cases.push_back({"reshape", {{{2, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.reshape(x[0], {3, 2}); }});
  cases.push_back({"transpose", {{{2, 3, 4}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.transpose(x[0], {2, 0, 1}); }});
  cases.push_back({"slice (strided)", {{{5, 6}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.slice(x[0], {1, 0}, {5, 5}, {2, 3}); }});
  cases.push_back({"slice", {{{4, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.slice(x[0], {1, 1}, {3, 3}); }});
  cases.push_back({"concat", {{{2, 3}}, {{1, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.concat({x[0], x[1]}, 0); }});
  cases.push_back({"pad", {{{2, 3}}, {{}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     return b.op("pad", {x[0], x[1]}, {{"low", IntList{1, 0}}, {"high", IntList{0, 2}}});
                   }});
  cases.push_back({"gather (repeated indices)", {{{5, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     ValueId idx = b.constant(Tensor::from<int64_t>(DType::kI64, {4}, {4, 0, 4, -2}));
                     return b.op("gather", {x[0], idx}, {{"axis", int64_t{0}}});
                   }});
  cases.push_back({"gather (axis 1)", {{{2, 4}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     ValueId idx = b.constant(Tensor::from<int32_t>(DType::kI32, {2, 2}, {3, 1, 1, 0}));
                     return b.op("gather", {x[0], idx}, {{"axis", int64_t{1}}});
                   }});
  cases.push_back({"scatter", {{{5, 3}}, {{2, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     ValueId idx = b.constant(Tensor::from<int64_t>(DType::kI64, {2}, {3, 1}));
                     return b.op("scatter", {x[0], idx, x[1]}, {{"axis", int64_t{0}}});
                   }});
  cases.push_back({"scatter (add)", {{{5, 3}}, {{3, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) {
                     ValueId idx = b.constant(Tensor::from<int64_t>(DType::kI64, {3}, {2, 2, 0}));
                     return b.op("scatter", {x[0], idx, x[1]}, {{"axis", int64_t{0}}, {"reduce", std::string("add")}});
                   }});
  for (IntList axes : {IntList{0}, IntList{1}, IntList{0, 2}, IntList{0, 1, 2}}) {
    for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin, ReduceKind::kProd}) {
      std::string name = reduce_op_name(k) + " (axes";
      for (int64_t a : axes) name += " " + std::to_string(a);
      cases.push_back({name + ")", {{{2, 3, 2}, 0.5, 2.0}},
                       [axes, k](GraphBuilder& b, const std::vector<ValueId>& x) { return b.reduce(x[0], axes, k); }});
    }
  }
  cases.push_back({"dot_general (matmul)", {{{2, 3}}, {{3, 4}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.dot_general(x[0], x[1], {}, {}, {1}, {0}); }});
  cases.push_back({"dot_general (x W^T)", {{{2, 3}}, {{4, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.dot_general(x[0], x[1], {}, {}, {1}, {1}); }});
  cases.push_back({"dot_general (batched)", {{{2, 3, 4}}, {{2, 4, 2}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.dot_general(x[0], x[1], {0}, {0}, {2}, {1}); }});
  cases.push_back({"dot_general (batch and contract dims out of order)", {{{3, 2, 4}}, {{4, 5, 2}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.dot_general(x[0], x[1], {1}, {2}, {2}, {0}); }});
  cases.push_back({"dot_general (two contracting dims)", {{{2, 3, 4}}, {{4, 5, 3}}},
                   [](GraphBuilder& b, const std::vector<ValueId>& x) { return b.dot_general(x[0], x[1], {}, {}, {2, 1}, {0, 2}); }});
  return cases;
}

// a + shift * I for each matrix of a stack: random entries in [-1, 1) become well conditioned.
ValueId shifted(GraphBuilder& b, ValueId a, double shift) {
  const Shape& s = b.type(a).shape;
  const int64_t n = s.back().value;
  Tensor eye(DType::kF64, {n, n});
  for (int64_t i = 0; i < n; ++i) eye.as<double>()[i * n + i] = shift;
  return b.add(a, b.broadcast_to(b.constant(eye), s));
}

ValueId triangular(GraphBuilder& b, ValueId a, ValueId rhs, int64_t lower, int64_t transpose,
                   int64_t unit) {
  return b.op("TriangularSolve", {shifted(b, a, 4.0), rhs},
              {{"lower", lower}, {"transpose", transpose}, {"unit_diagonal", unit}});
}

// The dense solvers are HIR ops kept whole by autodiff (no decomposition); their rules are
// checked the same way. TriangularSolve reads one triangle, so the others' finite differences
// are zero and so must the rule's entries be. Cholesky's input is built symmetric positive
// definite (a a^T + 3I), which also checks its symmetric-cotangent convention.
std::vector<Case> linalg_cases() {
  std::vector<Case> cases;
  using X = std::vector<ValueId>;
  cases.push_back({"Solve", {{{3, 3}}, {{3, 2}}},
                   [](GraphBuilder& b, const X& x) { return b.op("Solve", {shifted(b, x[0], 4.0), x[1]}); }});
  cases.push_back({"Solve (vector b)", {{{4, 4}}, {{4}}},
                   [](GraphBuilder& b, const X& x) { return b.op("Solve", {shifted(b, x[0], 4.0), x[1]}); }});
  cases.push_back({"Solve (batched)", {{{2, 3, 3}}, {{2, 3, 1}}},
                   [](GraphBuilder& b, const X& x) { return b.op("Solve", {shifted(b, x[0], 4.0), x[1]}); }});
  for (int64_t lower : {0, 1})
    for (int64_t transpose : {0, 1})
      cases.push_back({fmt::format("TriangularSolve (lower {}, transpose {})", lower, transpose),
                       {{{3, 3}}, {{3, 2}}},
                       [=](GraphBuilder& b, const X& x) { return triangular(b, x[0], x[1], lower, transpose, 0); }});
  cases.push_back({"TriangularSolve (unit diagonal, batched)", {{{2, 3, 3}}, {{2, 3, 2}}},
                   [](GraphBuilder& b, const X& x) { return triangular(b, x[0], x[1], 1, 1, 1); }});
  auto spd = [](GraphBuilder& b, ValueId a) {
    const int64_t r = b.type(a).rank();
    IntList batch;
    for (int64_t d = 0; d < r - 2; ++d) batch.push_back(d);
    return shifted(b, b.dot_general(a, a, batch, batch, {r - 1}, {r - 1}), 3.0);
  };
  cases.push_back({"Cholesky", {{{4, 4}}},
                   [=](GraphBuilder& b, const X& x) { return b.op("Cholesky", {spd(b, x[0])}); }});
  cases.push_back({"Cholesky (batched, then a solve with the factor)", {{{2, 3, 3}}, {{2, 3, 2}}},
                   [=](GraphBuilder& b, const X& x) {
                     ValueId l = b.op("Cholesky", {spd(b, x[0])});
                     return b.op("TriangularSolve", {l, x[1]}, {{"lower", int64_t{1}}});
                   }});
  return cases;
}

TEST(VjpRules, DenseSolversMatchFiniteDifferences) {
  for (const Case& c : linalg_cases()) check_case(c);
}

TEST(VjpRules, DenseSolversStayWholeThroughDecomposition) {
  Graph hir;
  GraphBuilder h(hir);
  ValueId a = h.input("a", {DType::kF64, {3, 3}});
  ValueId rhs = h.input("b", {DType::kF64, {3}});
  ValueId l = h.op("reduce_sum", {h.op("Solve", {a, rhs})}, {{"axes", IntList{0}}});
  hir.values[l].name = "loss";
  hir.outputs.push_back(l);
  Graph g = decompose_to_mir(hir);
  int solves = 0;
  for (const Node& n : g.nodes) solves += n.op == "Solve";
  EXPECT_EQ(solves, 1);
  append_gradients(g, g.outputs[0], {*g.find_value("a"), *g.find_value("b")});
  solves = 0;
  for (const Node& n : g.nodes) solves += n.op == "Solve";
  EXPECT_EQ(solves, 2);  // the forward one and the transposed one of the backward pass
}

TEST(VjpRules, ElementwiseMatchFiniteDifferences) {
  for (const Case& c : elementwise_cases()) check_case(c);
}

TEST(VjpRules, StructuralMatchFiniteDifferences) {
  for (const Case& c : structural_cases()) check_case(c);
}

// Every primitive is covered: either a case above exercises its rule, or it is one whose result
// carries no cotangent; while has no rule and is refused by name. bitcast's rule (the opposite
// view of c64 as f32 pairs) is checked with the complex gradients (test_complex_gradients.cpp).
TEST(VjpRules, EveryPrimitiveHasARuleOrIsRefusedByName) {
  std::set<std::string> tested;
  for (auto cases : {elementwise_cases(), structural_cases()})
    for (const Case& c : cases) tested.insert(c.name.substr(0, c.name.find(' ')));
  const std::set<std::string> no_flow = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
                                         "not", "iota", "constant", "dim_size"};
  for (const OpDef& d : OpRegistry::instance().ops()) {
    if (d.level != OpLevel::kMir) continue;
    if (d.name == "while") {
      EXPECT_FALSE(d.gradient);
      continue;
    }
    EXPECT_TRUE(d.gradient) << d.name;
    EXPECT_TRUE(tested.count(d.name) || no_flow.count(d.name) || d.name == "bitcast")
        << d.name << " has no finite-difference case";
  }
}

TEST(Autodiff, HirOpsDifferentiateThroughTheirDecomposition) {
  // loss = sum(Softmax(Linear(x, W, b))[:, 0] ...) through decompose_to_mir; checked by FD on W.
  Graph hir;
  GraphBuilder h(hir);
  ValueId x = h.input("x", {DType::kF64, {2, 3}});
  ValueId w = h.input("w", {DType::kF64, {4, 3}});
  ValueId bias = h.input("b", {DType::kF64, {4}});
  ValueId y = h.op("Softmax", {h.op("Relu", {h.op("Linear", {x, w, bias})})});
  ValueId l = h.op("reduce_sum", {h.mul(y, y)}, {{"axes", IntList{0, 1}}});
  hir.values[l].name = "loss";
  hir.outputs.push_back(l);
  Graph g = decompose_to_mir(hir);
  ValueId loss = g.outputs[0];
  std::vector<ValueId> wrt;
  for (const char* n : {"w", "b"}) wrt.push_back(*g.find_value(n));
  auto grads = append_gradients(g, loss, wrt);
  for (ValueId v : grads) g.outputs.push_back(v);
  std::mt19937 rng(7);
  NamedTensors feed = {{"x", random_f64({2, 3}, -1, 1, rng)}, {"w", random_f64({4, 3}, -1, 1, rng)},
                       {"b", random_f64({4}, -1, 1, rng)}};
  Session session(test::cpu_target());
  CompiledModel model = session.compile(g);
  NamedTensors out = model.run(feed);
  for (size_t k = 0; k < wrt.size(); ++k) {
    std::string name = g.values[wrt[k]].name;
    const Tensor& analytic = out.at(g.values[grads[k]].name);
    for (int64_t j = 0; j < feed.at(name).numel(); ++j) {
      NamedTensors plus = feed, minus = feed;
      plus[name] = feed.at(name).clone();
      minus[name] = feed.at(name).clone();
      plus[name].as<double>()[j] += 1e-6;
      minus[name].as<double>()[j] -= 1e-6;
      double fd = (model.run(plus).at("loss").scalar_at(0) - model.run(minus).at("loss").scalar_at(0)) / 2e-6;
      EXPECT_NEAR(analytic.scalar_at(j), fd, 1e-6) << name << "[" << j << "]";
    }
  }
}

TEST(Autodiff, RefusesWhatItCannotDifferentiate) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {2}});
  ValueId y = b.op("Exp", {x});  // HIR, not decomposed
  ValueId l = b.reduce(y, {0}, ReduceKind::kSum);
  try {
    append_gradients(g, l, {x});
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Exp'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("decompose_to_mir"), std::string::npos) << e.what();
  }
  EXPECT_THROW(append_gradients(g, y, {x}), Error);  // not a scalar
}

}  // namespace
}  // namespace rlx
