// A norm's, softmax's or attention's forward and backward pass at MiniLM's sizes (32 sequences of
// 128 tokens, hidden 384, 12 heads; attention at batch 8, head dim 32), and softmax cross-entropy
// at MNIST's [128, 10] and a language model's [8*128, 32000], on the cpu, three ways, in
// interleaved rounds (the median of each):
//   native      the rule's backward op on the cpu's fused kernel (what training runs now)
//   backward-ir the same graph with the backward op through its MIR decomposition (the path of
//               a target without the kernel)
//   mir-autodiff autodiff through the forward op's MIR decomposition (what training ran before
//               the ops had rules)
// loss = sum(op(x) * r), gradients for every float input (not the cross-entropy's labels); the
// forward op is the cpu's native kernel in the first two. For the cross-entropy, mir-autodiff is
// what a training step ran before the op existed (softmax_cross_entropy built from primitives).
// Threads: all of oneTBB's. An argument runs only the cases whose name contains it.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

using namespace rlx;

namespace {

constexpr int kRounds = 9, kRunsPerRound = 10;

// The cpu with the backward ops refused, so they take their decompositions.
class BackwardRefused final : public Target {
 public:
  explicit BackwardRefused(std::shared_ptr<Target> cpu) : cpu_(std::move(cpu)) {}
  std::string name() const override { return cpu_->name(); }
  Verdict claim_native(const NodeSignature& s) const override {
    if (s.op.ends_with("Backward")) return Verdict::no("the bench takes the decomposition");
    return cpu_->claim_native(s);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return cpu_->accepts_primitive(s);
  }
  Verdict can_execute() const override { return cpu_->can_execute(); }
  std::unique_ptr<Executable> compile(const lir::Program& p) override { return cpu_->compile(p); }
  std::vector<Artifact> emit(const lir::Program& p, const std::filesystem::path& d) override {
    return cpu_->emit(p, d);
  }
  std::shared_ptr<Device> device() override { return cpu_->device(); }

 private:
  std::shared_ptr<Target> cpu_;
};

// Claims nothing: dispatch against it decomposes every HIR op, as autodiff did before.
class DecomposeAll final : public Target {
 public:
  std::string name() const override { return "decompose-all"; }
  Verdict claim_native(const NodeSignature&) const override { return Verdict::no("none"); }
  Verdict accepts_primitive(const NodeSignature&) const override { return Verdict::yes(); }
  Verdict can_execute() const override { return Verdict::no("none"); }
  std::unique_ptr<Executable> compile(const lir::Program&) override { return nullptr; }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    return {};
  }
};

struct Case {
  std::string name;
  std::string op;
  // The op's inputs in order, by name and shape; the loss weight r takes the result's shape.
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;
  std::vector<int64_t> result;
  Attrs attrs;
  // SoftmaxCrossEntropy: an i32 "labels" [N] input follows the logits (not differentiated).
  bool labels = false;
  int runs = kRunsPerRound;
};

// A norm's or softmax's inputs: x [, scale [, bias]] of x's last dim.
std::vector<std::pair<std::string, std::vector<int64_t>>> norm_inputs(std::vector<int64_t> x,
                                                                      int params) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> in = {{"x", x}};
  if (params > 0) in.push_back({"scale", {x.back()}});
  if (params > 1) in.push_back({"bias", {x.back()}});
  return in;
}

// The forward graph ending in the loss, over the op's inputs and r.
Graph forward(const Case& c) {
  Graph g;
  GraphBuilder b(g);
  std::vector<ValueId> ins;
  for (const auto& [name, shape] : c.inputs)
    ins.push_back(b.input(name, {DType::kF32, Shape(shape.begin(), shape.end())}));
  if (c.labels) ins.push_back(b.input("labels", {DType::kI32, {c.inputs[0].second[0]}}));
  const ValueId r = b.input("r", {DType::kF32, Shape(c.result.begin(), c.result.end())});
  IntList axes;
  for (size_t a = 0; a < c.result.size(); ++a) axes.push_back(static_cast<int64_t>(a));
  const ValueId loss = b.reduce(b.mul(b.op(c.op, ins, c.attrs), r), axes, ReduceKind::kSum);
  g.values[loss].name = "loss";
  g.outputs.push_back(loss);
  return g;
}

Graph with_gradients(Graph g) {
  std::vector<ValueId> wrt;
  for (ValueId v : g.inputs)
    if (g.values[v].name != "r" && g.values[v].name != "labels") wrt.push_back(v);
  for (ValueId grad : append_gradients(g, *g.find_value("loss"), wrt)) g.outputs.push_back(grad);
  return g;
}

NamedTensors inputs_of(const Case& c) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  auto fill = [&](std::vector<int64_t> shape) {
    Tensor t(DType::kF32, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = u(rng);
    return t;
  };
  NamedTensors in = {{"r", fill(c.result)}};
  for (const auto& [name, shape] : c.inputs) in[name] = fill(shape);
  if (c.labels) {
    const auto& logits = c.inputs[0].second;
    std::uniform_int_distribution<int32_t> u_class(0, static_cast<int32_t>(logits[1]) - 1);
    Tensor t(DType::kI32, {logits[0]});
    for (int64_t i = 0; i < t.numel(); ++i) t.as<int32_t>()[i] = u_class(rng);
    in["labels"] = t;
  }
  return in;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / fmt::format("rlx-bench-cache-{}", ::getpid());
  ::setenv("RLX_CACHE_DIR", cache.c_str(), 1);
  try {
    registry::Options o;
    o.plugin_paths = {RLX_BENCH_PLUGIN_DIR};
    o.build_legality = false;
    static auto* reg = new registry::Registry(registry::Registry::discover(o));
    const std::shared_ptr<Target> cpu = reg->target("cpu");
    const auto refused = std::make_shared<BackwardRefused>(cpu);
    const std::vector<std::pair<std::string, std::vector<int64_t>>> qkv = {
        {"q", {8, 12, 128, 32}}, {"k", {8, 12, 128, 32}}, {"v", {8, 12, 128, 32}}};
    const std::vector<Case> cases = {
        {"LayerNorm [4096, 384]", "LayerNorm", norm_inputs({32 * 128, 384}, 2), {32 * 128, 384},
         {{"epsilon", 1e-12}}},
        {"RMSNorm [4096, 384]", "RMSNorm", norm_inputs({32 * 128, 384}, 1), {32 * 128, 384},
         {{"epsilon", 1e-6}}},
        {"Softmax [49152, 128]", "Softmax", norm_inputs({32 * 12 * 128, 128}, 0),
         {32 * 12 * 128, 128}, {{"axis", int64_t{-1}}}},
        // MiniLM's attention at batch 8: q, k, v [8, 12, 128, 32], unmasked and causal.
        {"Attention [8,12,128,32]", "Attention", qkv, {8, 12, 128, 32}, {{"mask", "none"}}},
        {"Attention causal", "Attention", qkv, {8, 12, 128, 32}, {{"mask", "causal"}}},
        // A training step's loss: MNIST's batch, and 8 sequences of 128 tokens over a 32000-token
        // vocabulary (131 MB of f32 logits: fewer runs per round).
        {"SoftmaxCE [128, 10]", "SoftmaxCrossEntropy", {{"logits", {128, 10}}}, {128}, {}, true},
        {"SoftmaxCE [1024, 32000]", "SoftmaxCrossEntropy", {{"logits", {8 * 128, 32000}}}, {8 * 128},
         {}, true, 2},
    };
    fmt::print("cpu: {}; {} rounds of {} runs, interleaved; median ms per forward + backward\n\n",
               cpu->can_execute().reason, kRounds, kRunsPerRound);
    fmt::print("{:<26} {:>9} {:>12} {:>13} {:>16} {:>17}\n", "case", "native", "backward-ir",
               "mir-autodiff", "backward-ir/nat", "mir-autodiff/nat");
    for (const Case& c : cases) {
      if (!only.empty() && c.name.find(only) == std::string::npos) continue;
      const Graph g = with_gradients(decompose_to_mir(forward(c)));
      DecomposeAll all;
      const Graph old = with_gradients(dispatch(forward(c), all).graph);
      Session s_native(cpu), s_refused(refused), s_old(cpu);
      std::vector<CompiledModel> models;
      models.push_back(s_native.compile(g));
      models.push_back(s_refused.compile(g));
      models.push_back(s_old.compile(old));
      const NamedTensors in = inputs_of(c);
      std::vector<NamedTensors> outs(models.size());
      for (size_t m = 0; m < models.size(); ++m) models[m].run(in, outs[m]);  // warm up
      std::vector<std::vector<double>> ms(models.size());
      for (int round = 0; round < kRounds; ++round)
        for (size_t m = 0; m < models.size(); ++m) {
          const double t0 = now();
          for (int i = 0; i < c.runs; ++i) models[m].run(in, outs[m]);
          ms[m].push_back((now() - t0) * 1e3 / c.runs);
        }
      const double nat = median(ms[0]), ir = median(ms[1]), old_ms = median(ms[2]);
      fmt::print("{:<26} {:>9.3f} {:>12.3f} {:>13.3f} {:>15.2f}x {:>16.2f}x\n", c.name, nat, ir,
                 old_ms, ir / nat, old_ms / nat);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "rlx_bench_norm_backward: {}\n", e.what());
    fs::remove_all(cache);
    return 1;
  }
  fs::remove_all(cache);
  return 0;
}
