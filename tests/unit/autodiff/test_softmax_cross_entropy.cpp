// SoftmaxCrossEntropy and SoftmaxCrossEntropyBackward (core/src/ops/ops_hir_loss.cpp), the loss
// softmax_cross_entropy builds from them and the op's gradient rule: the forward op against hand
// values and a reference computed here (f64 inputs, long-double arithmetic), the rule against
// central finite differences in f64 (with the cpu's native kernels and with the ops forced through
// their decompositions), the native kernels against the decompositions in f32 on random and large
// (1e4) logits, confident rows, labels out of range, and a target that can lower neither way.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "backward_test_support.h"
#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/losses.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/optimizers.h"
#include "rlx/core/runtime.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::as_dtype;
using test::paths_of;
using test::random_tensor;

// The cpu with both ops' native kernels refused (cpu_decomposing refuses backward ops only): the
// path of a target without them.
std::shared_ptr<Target> cpu_decomposing() {
  return test::cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    if (native && s.op.starts_with("SoftmaxCrossEntropy"))
      return "forced through the decomposition by the test";
    return std::nullopt;
  });
}

// Both ops over logits [n, c] of dtype d and labels of label_dtype: "loss" [n] and "dlogits".
Graph both_ops(DType d, int64_t n, int64_t c, DType label_dtype) {
  Graph g;
  GraphBuilder b(g);
  const ValueId logits = b.input("logits", {d, {n, c}});
  const ValueId labels = b.input("labels", {label_dtype, {n}});
  const ValueId dloss = b.input("dloss", {d, {n}});
  b.set_loc("ce");
  const ValueId loss = b.op("SoftmaxCrossEntropy", {logits, labels});
  const ValueId dlogits = b.op("SoftmaxCrossEntropyBackward", {logits, labels, dloss});
  g.values[loss].name = "loss";
  g.values[dlogits].name = "dlogits";
  g.outputs = {loss, dlogits};
  return g;
}

Tensor labels_of(DType d, const std::vector<int64_t>& v) {
  Tensor t(d, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (d == DType::kI32)
      t.as<int32_t>()[i] = static_cast<int32_t>(v[i]);
    else
      t.as<int64_t>()[i] = v[i];
  }
  return t;
}

std::vector<int64_t> random_labels(int64_t n, int64_t c, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> u(0, c - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

// The definition with the row maximum taken out, in long double: a confident row's loss log(s)
// with s = 1 + 1e-11 needs more than f64's digits (ConfidentRows... below).
struct Reference {
  std::vector<double> loss, dlogits;
};

Reference reference(const Tensor& logits, const std::vector<int64_t>& labels, const Tensor& dloss) {
  using Wide = long double;
  const int64_t n = logits.shape()[0], c = logits.shape()[1];
  Reference r{std::vector<double>(n), std::vector<double>(n * c)};
  auto x = [&](int64_t i, int64_t j) { return static_cast<Wide>(logits.scalar_at(i * c + j)); };
  for (int64_t i = 0; i < n; ++i) {
    Wide m = -INFINITY, s = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x(i, j));
    for (int64_t j = 0; j < c; ++j) s += std::exp(x(i, j) - m);
    r.loss[i] = static_cast<double>(std::log(s) + m - x(i, labels[i]));
    for (int64_t j = 0; j < c; ++j)
      r.dlogits[i * c + j] = static_cast<double>(
          (std::exp(x(i, j) - m) / s - (j == labels[i] ? 1 : 0)) * dloss.scalar_at(i));
  }
  return r;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.scalar_at(i), want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " element " << i;
}

TEST(SoftmaxCrossEntropy, ForwardMatchesHandValues) {
  // Row 0: log(e + e^2 + e^3) - 3; row 1: log 3; row 2: logits of +-1e4, where exp without the
  // maximum taken out overflows: the loss is 1e4 and the gradient [1, -1, 0] exactly.
  const std::vector<double> hand = {0.40760596444438013, 1.0986122886681098, 1e4};
  const std::vector<double> hand_grad = {
      std::exp(1.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
      std::exp(2.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
      std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1,
      (1.0 / 3 - 1) * 2,
      1.0 / 3 * 2,
      1.0 / 3 * 2,
      1 * 0.5,
      -1 * 0.5,
      0};
  for (DType d : {DType::kF64, DType::kF32}) {
    for (DType ld : {DType::kI32, DType::kI64}) {
      const NamedTensors in = {
          {"logits",
           as_dtype(Tensor::from<double>(DType::kF64, {3, 3}, {1, 2, 3, 0, 0, 0, 1e4, 0, -1e4}),
                    d)},
          {"labels", labels_of(ld, {2, 0, 1})},
          {"dloss", as_dtype(Tensor::from<double>(DType::kF64, {3}, {1, 2, 0.5}), d)}};
      const double tol = d == DType::kF64 ? 1e-14 : 2e-7;
      for (auto target : {test::cpu_target(), cpu_decomposing()}) {
        SCOPED_TRACE(fmt::format("{} labels {}", dtype_name(d), dtype_name(ld)));
        Session s(target);
        const NamedTensors out = s.compile(both_ops(d, 3, 3, ld)).run(in);
        expect_values(out.at("loss"), hand, tol, "loss");
        expect_values(out.at("dlogits"), hand_grad, tol, "dlogits");
      }
    }
  }
  // softmax_cross_entropy keeps its signature and takes the mean of the op's rows.
  Graph g;
  GraphBuilder b(g);
  const ValueId mean = softmax_cross_entropy(b, b.input("logits", {DType::kF64, {3, 3}}),
                                             b.input("labels", {DType::kI64, {3}}));
  EXPECT_EQ(g.nodes[g.values[mean].producer].op, "mul");
  std::set<std::string> ops;
  for (const Node& n : g.nodes) ops.insert(n.op);
  EXPECT_TRUE(ops.count("SoftmaxCrossEntropy"));
  g.values[mean].name = "mean";
  g.outputs.push_back(mean);
  Session s(test::cpu_target());
  const NamedTensors out = s.compile(g).run(
      {{"logits", Tensor::from<double>(DType::kF64, {3, 3}, {1, 2, 3, 0, 0, 0, 1e4, 0, -1e4})},
       {"labels", labels_of(DType::kI64, {2, 0, 1})}});
  EXPECT_NEAR(out.at("mean").scalar_at(0), (hand[0] + hand[1] + hand[2]) / 3, 1e-12);
}

TEST(SoftmaxCrossEntropy, MatchesAnF64ReferenceNativeAndDecomposed) {
  std::mt19937 rng(7);
  for (auto [n, c] : {std::pair<int64_t, int64_t>{37, 19}, {5, 1000}, {1, 1}}) {
    const Tensor logits = random_tensor(DType::kF64, {n, c}, -6, 6, rng);
    const Tensor dloss = random_tensor(DType::kF64, {n}, -1, 1, rng);
    const std::vector<int64_t> labels = random_labels(n, c, rng);
    const Reference want = reference(logits, labels, dloss);
    const NamedTensors in = {
        {"logits", logits}, {"labels", labels_of(DType::kI64, labels)}, {"dloss", dloss}};
    for (auto [target, path] : {std::pair{test::cpu_target(), LoweringPath::kNative},
                                {cpu_decomposing(), LoweringPath::kSharedIr}}) {
      SCOPED_TRACE(
          fmt::format("[{}, {}] {}", n, c, path == LoweringPath::kNative ? "native" : "ir"));
      Session s(target);
      CompiledModel model = s.compile(both_ops(DType::kF64, n, c, DType::kI64));
      EXPECT_EQ(paths_of(model, "SoftmaxCrossEntropy"), std::vector<LoweringPath>{path});
      EXPECT_EQ(paths_of(model, "SoftmaxCrossEntropyBackward"), std::vector<LoweringPath>{path});
      const NamedTensors out = model.run(in);
      expect_values(out.at("loss"), want.loss, 1e-12, "loss");
      expect_values(out.at("dlogits"), want.dlogits, 1e-12, "dlogits");
    }
  }
}

// loss = sum(SoftmaxCrossEntropy(logits, labels) * w) for a random w (so dloss differs per row),
// and the mean softmax_cross_entropy takes; gradients wrt the logits by the rule, checked
// against central differences of the loss.
void check_gradient(std::shared_ptr<Target> target, LoweringPath path, bool mean) {
  SCOPED_TRACE(fmt::format("{} {}", mean ? "mean" : "weighted sum",
                           path == LoweringPath::kNative ? "native" : "decomposition"));
  std::mt19937 rng(2024);
  const int64_t n = 5, c = 7;
  Graph g;
  GraphBuilder b(g);
  const ValueId logits = b.input("logits", {DType::kF64, {n, c}});
  const ValueId labels = b.input("labels", {mean ? DType::kI64 : DType::kI32, {n}});
  ValueId loss;
  if (mean) {
    loss = softmax_cross_entropy(b, logits, labels);
  } else {
    const ValueId w = b.constant(random_tensor(DType::kF64, {n}, 0.5, 1.5, rng));
    loss = b.reduce(b.mul(b.op("SoftmaxCrossEntropy", {logits, labels}), w), {0}, ReduceKind::kSum);
  }
  g.values[loss].name = "loss";
  g.outputs.push_back(loss);
  g = decompose_to_mir(g);
  const ValueId grad = append_gradients(g, *g.find_value("loss"), {*g.find_value("logits")}).at(0);
  g.values[grad].name = "grad";
  g.outputs.push_back(grad);
  verify_graph(g);

  Session session(std::move(target));
  CompiledModel model = session.compile(g);
  EXPECT_EQ(paths_of(model, "SoftmaxCrossEntropy"), std::vector<LoweringPath>{path});
  EXPECT_EQ(paths_of(model, "SoftmaxCrossEntropyBackward"), std::vector<LoweringPath>{path});
  const Tensor x = random_tensor(DType::kF64, {n, c}, -2, 2, rng);
  const NamedTensors feed = {
      {"logits", x},
      {"labels", labels_of(mean ? DType::kI64 : DType::kI32, random_labels(n, c, rng))}};
  const Tensor analytic = model.run(feed).at("grad");
  ASSERT_EQ(analytic.numel(), x.numel());
  for (int64_t j = 0; j < x.numel(); ++j) {
    const double h = 1e-6;
    NamedTensors plus = feed, minus = feed;
    plus["logits"] = x.clone();
    minus["logits"] = x.clone();
    plus["logits"].as<double>()[j] += h;
    minus["logits"].as<double>()[j] -= h;
    const double fd =
        (model.run(plus).at("loss").scalar_at(0) - model.run(minus).at("loss").scalar_at(0)) /
        (2 * h);
    EXPECT_NEAR(analytic.scalar_at(j), fd, 1e-7 * std::max(1.0, std::fabs(fd))) << "element " << j;
  }
}

TEST(SoftmaxCrossEntropy, GradientMatchesFiniteDifferences) {
  for (bool mean : {false, true}) {
    check_gradient(test::cpu_target(), LoweringPath::kNative, mean);
    check_gradient(cpu_decomposing(), LoweringPath::kSharedIr, mean);
  }
}

// f32 on both paths against the exact (f64) values of the same rounded inputs, on shapes from
// MNIST's to a language model's vocabulary, with logits of magnitude 1e4 where an unshifted exp
// would overflow: both must be finite and as close as f32 allows.
TEST(SoftmaxCrossEntropy, NativeKernelsAgreeWithDecompositionsInF32) {
  std::mt19937 rng(11);
  struct Shape2 {
    int64_t n, c;
    double scale;
  };
  for (const Shape2 sh : {Shape2{128, 10, 3}, Shape2{128, 10, 1e4}, Shape2{33, 4097, 5},
                          Shape2{16, 32000, 1e4}, Shape2{3, 17, 1e4}}) {
    for (DType ld : {DType::kI32, DType::kI64}) {
      SCOPED_TRACE(fmt::format("[{}, {}] logits within +-{} labels {}", sh.n, sh.c, sh.scale,
                               dtype_name(ld)));
      const Tensor logits =
          as_dtype(random_tensor(DType::kF64, {sh.n, sh.c}, -sh.scale, sh.scale, rng), DType::kF32);
      const Tensor dloss = as_dtype(random_tensor(DType::kF64, {sh.n}, -1, 1, rng), DType::kF32);
      const std::vector<int64_t> labels = random_labels(sh.n, sh.c, rng);
      const NamedTensors in = {
          {"logits", logits}, {"labels", labels_of(ld, labels)}, {"dloss", dloss}};
      const Reference exact = reference(logits, labels, dloss);
      const Graph g = both_ops(DType::kF32, sh.n, sh.c, ld);
      Session native_session(test::cpu_target()), shared_session(cpu_decomposing());
      const NamedTensors native = native_session.compile(g).run(in);
      const NamedTensors shared = shared_session.compile(g).run(in);
      for (const NamedTensors* got : {&native, &shared}) {
        const std::string what = got == &native ? "native" : "decomposition";
        for (const char* out : {"loss", "dlogits"}) {
          const Tensor& t = got->at(out);
          for (int64_t i = 0; i < t.numel(); ++i)
            ASSERT_TRUE(std::isfinite(t.scalar_at(i))) << what << " " << out << " " << i;
        }
        // The loss is log(sum) + (max - picked), each term within an ulp or two of f32.
        expect_values(got->at("loss"), exact.loss, 2e-6, what + " loss");
        expect_values(got->at("dlogits"), exact.dlogits, 2e-6, what + " dlogits");
      }
      test::expect_all_close(shared, native, 4e-6, "native against decomposition");
    }
  }
}

// A row the model already gets right has a loss of log(1 + rest) with rest << 1, the sum of the
// other classes' exp(x - x[label]), and a gradient of -rest at the label. The native kernels keep
// it apart from the label's term in f64, so both stay accurate relative to their size in f32
// (the f32 decomposition's log(s) and p - 1 round them to f32's absolute precision at 1, ~6e-8).
TEST(SoftmaxCrossEntropy, ConfidentRowsKeepTheirRelativePrecisionNatively) {
  const Tensor logits =
      Tensor::from<float>(DType::kF32, {3, 4}, {12, 0, 1, -3, 0, 0, 25, 0, 9, 9.5f, 0, 0});
  const std::vector<int64_t> labels = {0, 2, 1};
  const Tensor dloss = Tensor::from<float>(DType::kF32, {3}, {1, 0.25f, 1});
  const Reference exact = reference(logits, labels, dloss);
  Session s(test::cpu_target());
  const NamedTensors out =
      s.compile(both_ops(DType::kF32, 3, 4, DType::kI32))
          .run({{"logits", logits}, {"labels", labels_of(DType::kI32, labels)}, {"dloss", dloss}});
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_NEAR(out.at("loss").scalar_at(i), exact.loss[i], 1e-6 * std::fabs(exact.loss[i]))
        << "row " << i;
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_NEAR(out.at("dlogits").scalar_at(i), exact.dlogits[i],
                1e-6 * std::fabs(exact.dlogits[i]))
        << "element " << i;
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeIsAnErrorOnTheNativeKernels) {
  const Graph g = both_ops(DType::kF32, 2, 10, DType::kI32);
  Session s(test::cpu_target());
  CompiledModel model = s.compile(g);
  for (int64_t bad : {10, -1}) {
    const NamedTensors in = {{"logits", Tensor(DType::kF32, {2, 10})},
                             {"labels", labels_of(DType::kI32, {3, bad})},
                             {"dloss", Tensor(DType::kF32, {2})}};
    try {
      model.run(in);
      ADD_FAILURE() << "label " << bad << " was accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(fmt::format("native:SoftmaxCrossEntropy ('ce'): label {} (row 1) is out "
                                     "of range for 10 classes",
                                     bad)),
                std::string::npos)
          << msg;
    }
  }
  // The decompositions raise nothing (a graph of primitives cannot): the row matches no class,
  // so its loss is logsumexp - max = log(10) on zero logits and its gradient the softmax.
  Session shared(cpu_decomposing());
  const NamedTensors out =
      shared.compile(g).run({{"logits", Tensor(DType::kF32, {2, 10})},
                             {"labels", labels_of(DType::kI32, {3, 10})},
                             {"dloss", Tensor::from<float>(DType::kF32, {2}, {1, 1})}});
  EXPECT_NEAR(out.at("loss").scalar_at(1), std::log(10.0), 1e-6);
  EXPECT_NEAR(out.at("dlogits").scalar_at(10), 0.1, 1e-6);
}

TEST(SoftmaxCrossEntropy, ATargetThatCanLowerNeitherWayNamesTheNode) {
  // No native kernel and no exp among the primitives: neither path is legal.
  auto neither = test::cpu_refusing([](const NodeSignature& s, bool native) {
    if (native && s.op.starts_with("SoftmaxCrossEntropy"))
      return std::optional<std::string>("no kernel");
    if (!native && s.op == "exp") return std::optional<std::string>("no exp here");
    return std::optional<std::string>();
  });
  Session s(neither);
  try {
    s.compile(both_ops(DType::kF32, 4, 3, DType::kI64));
    ADD_FAILURE() << "compiled";
  } catch (const CompileError& e) {
    const std::string msg = e.what();
    for (const char* part : {"%loss", "SoftmaxCrossEntropy", "'ce'", "no kernel", "no exp here"})
      EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
  }
}

TEST(SoftmaxCrossEntropy, OpsReportShapeErrorsByName) {
  auto error_of = [](const std::string& op, const std::vector<TensorType>& in) {
    Graph g;
    GraphBuilder b(g);
    std::vector<ValueId> ins;
    for (const TensorType& t : in) ins.push_back(b.input("in" + std::to_string(ins.size()), t));
    try {
      b.op(op, ins);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const TensorType logits{DType::kF32, {4, 3}}, labels{DType::kI64, {4}};
  std::string e = error_of("SoftmaxCrossEntropy", {logits, {DType::kF32, {4}}});
  EXPECT_NE(e.find("SoftmaxCrossEntropy needs i32 or i64 labels [N], got f32[4]"),
            std::string::npos)
      << e;
  e = error_of("SoftmaxCrossEntropy", {{DType::kI32, {4, 3}}, labels});
  EXPECT_NE(e.find("SoftmaxCrossEntropy needs float logits [N, C]"), std::string::npos) << e;
  e = error_of("SoftmaxCrossEntropy", {logits, {DType::kI64, {5}}});
  EXPECT_NE(e.find("must have one entry per row"), std::string::npos) << e;
  e = error_of("SoftmaxCrossEntropyBackward", {logits, labels, {DType::kF32, {4, 1}}});
  EXPECT_NE(e.find("SoftmaxCrossEntropyBackward: dloss must be f32[4]"), std::string::npos) << e;
  // A symbolic batch is fine.
  EXPECT_EQ(error_of("SoftmaxCrossEntropy",
                     {{DType::kF32, {Dim::symbol("B"), 3}}, {DType::kI32, {Dim::symbol("B")}}}),
            "");
}

// The mlp's training step keeps the loss whole: the forward op and its backward op, both native
// on the cpu.
TEST(SoftmaxCrossEntropy, TrainingGraphKeepsBothOps) {
  Graph model;
  GraphBuilder b(model);
  std::mt19937 rng(3);
  const ValueId x = b.input("x", {DType::kF32, {8, 4}});
  const ValueId w = b.param("w", random_tensor(DType::kF32, {3, 4}, -1, 1, rng));
  const ValueId loss =
      softmax_cross_entropy(b, b.op("Linear", {x, w}), b.input("y", {DType::kI32, {8}}));
  model.values[loss].name = "loss";
  model.outputs.push_back(loss);
  Trainer trainer(test::cpu_target(), model, parse_optimizer("sgd:lr=0.1"));
  std::set<std::string> ops;
  for (const Node& n : trainer.graph().graph.nodes) ops.insert(n.op);
  EXPECT_TRUE(ops.count("SoftmaxCrossEntropy"));
  EXPECT_TRUE(ops.count("SoftmaxCrossEntropyBackward"));
  EXPECT_TRUE(
      std::isfinite(trainer.step({{"x", random_tensor(DType::kF32, {8, 4}, -1, 1, rng)},
                                  {"y", labels_of(DType::kI32, {0, 1, 2, 0, 1, 2, 0, 1})}})));
}

}  // namespace
}  // namespace rlx
