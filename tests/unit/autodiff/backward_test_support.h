// What the native-backward-op tests (test_norm_gradients.cpp, test_attention_gradients.cpp,
// test_softmax_cross_entropy.cpp) share: the cpu with its backward kernels refused, random
// inputs, dtype conversion, how an op was lowered, and the checks every gradient rule and native
// backward kernel must pass (against finite differences, against the op's decomposition, and in
// a training step).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rlx/core/autodiff.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/optimizers.h"
#include "rlx/core/runtime.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx::test {

// The cpu with every native *Backward kernel refused: the backward ops take their decompositions.
inline std::shared_ptr<Target> cpu_decomposing() {
  return cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    if (native && s.op.ends_with("Backward")) return "forced through the decomposition by the test";
    return std::nullopt;
  });
}

// f32 or f64 values uniform in [lo, hi).
inline Tensor random_tensor(DType d, const std::vector<int64_t>& shape, double lo, double hi,
                            std::mt19937& rng) {
  Tensor t(d, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (d == DType::kF64)
      t.as<double>()[i] = u(rng);
    else
      t.as<float>()[i] = static_cast<float>(u(rng));
  }
  return t;
}

// How each node of `op` was lowered on the target that compiled `model`.
inline std::vector<LoweringPath> paths_of(const CompiledModel& model, const std::string& op) {
  std::vector<LoweringPath> paths;
  for (const DispatchEntry& e : model.report().entries)
    if (e.op == op) paths.push_back(e.path);
  return paths;
}

// `g` has f64 inputs x0, x1, ... (fed by `feed`) and a scalar output "loss" built on one forward
// op. The forward op is kept whole through decompose_to_mir and its rule emits `backward_op`,
// lowered on `target` along `path`; each input's gradient is checked element by element against
// central differences of the loss.
inline void expect_rule_matches_finite_differences(Graph g, const NamedTensors& feed,
                                                   std::shared_ptr<Target> target,
                                                   const std::string& backward_op,
                                                   LoweringPath path) {
  g = decompose_to_mir(g);
  std::vector<ValueId> wrt;
  for (size_t i = 0; i < feed.size(); ++i) wrt.push_back(*g.find_value("x" + std::to_string(i)));
  const std::vector<ValueId> grads = append_gradients(g, *g.find_value("loss"), wrt);
  for (size_t i = 0; i < grads.size(); ++i) {
    g.values[grads[i]].name = "grad" + std::to_string(i);
    g.outputs.push_back(grads[i]);
  }
  verify_graph(g);

  Session session(std::move(target));
  CompiledModel model = session.compile(g);
  EXPECT_EQ(paths_of(model, backward_op), std::vector<LoweringPath>{path});
  const NamedTensors out = model.run(feed);
  auto loss_at = [&](const NamedTensors& f) { return model.run(f).at("loss").scalar_at(0); };
  for (size_t i = 0; i < wrt.size(); ++i) {
    const std::string name = "x" + std::to_string(i);
    const Tensor& analytic = out.at("grad" + std::to_string(i));
    const Tensor& x = feed.at(name);
    ASSERT_EQ(analytic.numel(), x.numel());
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double h = 1e-6;
      NamedTensors plus = feed, minus = feed;
      plus[name] = x.clone();
      minus[name] = x.clone();
      plus[name].as<double>()[j] += h;
      minus[name].as<double>()[j] -= h;
      const double fd = (loss_at(plus) - loss_at(minus)) / (2 * h);
      EXPECT_NEAR(analytic.scalar_at(j), fd, 1e-6 * std::max(1.0, std::fabs(fd)))
          << name << " element " << j;
    }
  }
}

// The same values in dtype d, f32 or f64 (f32 rounds them).
inline Tensor as_dtype(const Tensor& t, DType d) {
  Tensor out(d, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (d == DType::kF64)
      out.as<double>()[i] = t.scalar_at(i);
    else
      out.as<float>()[i] = static_cast<float>(t.scalar_at(i));
  }
  return out;
}

// Each tensor of `in` as_dtype d.
inline NamedTensors converted(const NamedTensors& in, DType d) {
  NamedTensors out;
  for (const auto& [name, t] : in) out[name] = as_dtype(t, d);
  return out;
}

// The graph of one backward op `op` alone (graph_of(d) builds it in dtype d) compiled with the
// cpu's native kernel and with the decomposition forced, run on `in` (f64 values, rounded to d so
// that the f64 run on them is the exact reference). In f64 the two agree to a few ulps (sums in
// another order); in f32 both must be as close to the exact values as f32 allows. The kernel's
// sums go in an order fixed by the shape alone, so a second run gives the same bits. Call it
// through ASSERT_NO_FATAL_FAILURE: a wrong lowering path ends the check.
inline void expect_native_agrees_with_decomposition(const std::function<Graph(DType)>& graph_of,
                                                    const std::string& op, const NamedTensors& in,
                                                    DType d, const std::string& what) {
  const Graph g = graph_of(d);
  const NamedTensors exact_in = converted(converted(in, d), DType::kF64);
  Session native_session(cpu_target()), shared_session(cpu_decomposing());
  CompiledModel native = native_session.compile(g), shared = shared_session.compile(g);
  ASSERT_EQ(paths_of(native, op), std::vector<LoweringPath>{LoweringPath::kNative});
  ASSERT_EQ(paths_of(shared, op), std::vector<LoweringPath>{LoweringPath::kSharedIr});
  const NamedTensors in_d = converted(exact_in, d);
  const NamedTensors got = native.run(in_d);
  if (d == DType::kF64) {
    expect_all_close(shared.run(exact_in), got, 1e-12, what);
  } else {
    // Sums over thousands of rows whose terms cancel reach ~1e-5 of a result of magnitude 1 in
    // f32; the native kernel must be as close as the decomposition is.
    Session exact_session(cpu_decomposing());
    const NamedTensors exact = exact_session.compile(graph_of(DType::kF64)).run(exact_in);
    expect_all_close(exact, converted(got, DType::kF64), 5e-5, what + " native");
    expect_all_close(exact, converted(shared.run(in_d), DType::kF64), 5e-5,
                     what + " decomposition");
  }
  const NamedTensors again = native.run(in_d);
  for (const auto& [name, t] : got)
    EXPECT_EQ(std::memcmp(t.data(), again.at(name).data(), t.nbytes()), 0) << name;
}

// `model` (f64, its loss named "loss") trained one SGD step on `batch` on the cpu: the training
// graph holds each of `ops` (the forward ops kept whole and the backward ops their rules emit),
// and the step moves each parameter by lr times the loss's central difference.
inline void expect_sgd_step_follows_gradient(const Graph& model, const NamedTensors& batch,
                                             const std::vector<std::string>& ops) {
  const double lr = 0.1;
  Trainer trainer(cpu_target(), model, parse_optimizer(fmt::format("sgd:lr={}", lr)));
  std::set<std::string> in_graph;
  for (const Node& n : trainer.graph().graph.nodes) in_graph.insert(n.op);
  for (const std::string& op : ops)
    EXPECT_TRUE(in_graph.count(op)) << op << " is not in the training graph";
  trainer.step(batch);

  Session session(cpu_target());
  CompiledModel forward = session.compile(params_as_inputs(model));
  NamedTensors feed = batch;
  for (const auto& [name, value] : model.weights) feed[name] = value;
  auto loss_at = [&](const NamedTensors& f) { return forward.run(f).at("loss").scalar_at(0); };
  for (const auto& [name, before] : model.weights) {
    const Tensor& after = trainer.parameters().at(name);
    for (int64_t j = 0; j < before.numel(); ++j) {
      NamedTensors plus = feed, minus = feed;
      plus[name] = before.clone();
      minus[name] = before.clone();
      plus[name].as<double>()[j] += 1e-6;
      minus[name].as<double>()[j] -= 1e-6;
      const double fd = (loss_at(plus) - loss_at(minus)) / 2e-6;
      EXPECT_NEAR(after.scalar_at(j), before.scalar_at(j) - lr * fd, 1e-7)
          << name << "[" << j << "]";
    }
  }
}

}  // namespace rlx::test
