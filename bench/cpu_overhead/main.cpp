// Per-run overhead of the cpu target on tiny graphs, with loop kernels generated (compiled) and
// interpreted, measured side by side in one process:
//   exe.run     Executable::run with a prepared pointer table (the target's own cost)
//   model.run   CompiledModel::run with named tensors (adds binding and output allocation)
//   compile     Target::compile of the lowered program: cold (empty kernel cache) and warm
// Usage: rlx_bench_cpu_overhead [runs]   (RLX_CACHE_DIR is set to a fresh folder for the cold
// compile; the user's cache is never touched)
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

struct Graph_ {
  const char* name;
  const char* ir;
};

const Graph_ kGraphs[] = {
    {"x*y+x f32[16] (1 kernel)",
     "graph @t(%x: f32[16], %y: f32[16]) {\n  %a = mul(%x, %y) : f32[16]\n  %b = add(%a, %x) : f32[16]\n"
     "  return %b\n}\n"},
    {"softmax f32[8,16] (4 kernels)",
     "graph @t(%x: f32[8,16]) {\n  %m = reduce_max(%x) {axes = [1]} : f32[8]\n"
     "  %mb = broadcast_in_dim(%m) {dims = [0], shape = [8, 16]} : f32[8,16]\n"
     "  %d = sub(%x, %mb) : f32[8,16]\n  %e = exp(%d) : f32[8,16]\n"
     "  %s = reduce_sum(%e) {axes = [1]} : f32[8]\n"
     "  %b = broadcast_in_dim(%s) {dims = [0], shape = [8, 16]} : f32[8,16]\n"
     "  %y = div(%e, %b) : f32[8,16]\n  return %y\n}\n"},
    {"layernorm f32[4,384]",
     "graph @t(%x: f32[4,384]) {\n  %s = reduce_sum(%x) {axes = [1]} : f32[4]\n"
     "  %n = constant() {value = dense<f32[]: [384]>} : f32[]\n"
     "  %nb = broadcast_in_dim(%n) {dims = [], shape = [4]} : f32[4]\n  %m = div(%s, %nb) : f32[4]\n"
     "  %mb = broadcast_in_dim(%m) {dims = [0], shape = [4, 384]} : f32[4,384]\n"
     "  %d = sub(%x, %mb) : f32[4,384]\n  %q = mul(%d, %d) : f32[4,384]\n"
     "  %v = reduce_sum(%q) {axes = [1]} : f32[4]\n  %vm = div(%v, %nb) : f32[4]\n"
     "  %r = rsqrt(%vm) : f32[4]\n  %rb = broadcast_in_dim(%r) {dims = [0], shape = [4, 384]} : f32[4,384]\n"
     "  %y = mul(%d, %rb) : f32[4,384]\n  return %y\n}\n"},
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median per-call time of f over `reps` batches of `runs` calls each.
template <typename F>
double per_call_us(int runs, F&& f) {
  std::vector<double> batches;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < runs; ++i) f();
    batches.push_back(us_since(t0) / runs);
  }
  return median(batches);
}

struct Result {
  double exe_us, model_us, compile_cold_ms, compile_warm_ms;
};

Result measure(const std::shared_ptr<rlx::Target>& target, const rlx::Graph& g, const char* mode,
               int runs) {
  ::setenv("RLX_CPU_KERNELS", mode, 1);
  rlx::Session session(target);
  rlx::CompiledModel model = session.compile(g);
  rlx::lir::Program program = model.lir_for({});
  Result r{};
  auto t0 = Clock::now();
  std::unique_ptr<rlx::Executable> exe = target->compile(program);
  r.compile_cold_ms = us_since(t0) / 1000;
  t0 = Clock::now();
  exe = target->compile(program);
  r.compile_warm_ms = us_since(t0) / 1000;

  rlx::NamedTensors inputs;
  std::vector<void*> ptrs(program.buffers.size(), nullptr);
  std::vector<rlx::Tensor> keep;
  for (auto& [name, b] : program.inputs) {
    rlx::Tensor t(program.buffers[b].dtype, program.buffers[b].shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = 0.01f * static_cast<float>(i % 97);
    inputs[name] = t;
    ptrs[b] = t.data();
  }
  for (auto& [name, b] : program.outputs) {
    keep.emplace_back(program.buffers[b].dtype, program.buffers[b].shape);
    ptrs[b] = keep.back().data();
  }
  for (const auto& b : program.buffers)
    if (b.kind == rlx::lir::BufferKind::kConstant) ptrs[b.id] = const_cast<void*>(b.data.data());
  exe->run(ptrs);
  r.exe_us = per_call_us(runs, [&] { exe->run(ptrs); });
  model.run(inputs);
  r.model_us = per_call_us(runs / 4 + 1, [&] { model.run(inputs); });
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::atoi(argv[1]) : 20000;
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / fmt::format("rlx-bench-cache-{}", ::getpid());
  ::setenv("RLX_CACHE_DIR", cache.c_str(), 1);
  try {
    rlx::registry::Options o;
    o.plugin_paths = {RLX_BENCH_PLUGIN_DIR};
    o.build_legality = false;
    static auto reg = new rlx::registry::Registry(rlx::registry::Registry::discover(o));
    std::shared_ptr<rlx::Target> cpu = reg->target("cpu");
    fmt::print("cpu: {}\nruns per batch: {}, median of 7 batches\n\n", cpu->can_execute().reason, runs);
    fmt::print("{:<32} {:>11} {:>11} {:>7} {:>12} {:>12} {:>13} {:>13}\n", "graph", "exe.run us",
               "interp us", "ratio", "model.run us", "interp us", "compile cold", "compile warm");
    for (const auto& gr : kGraphs) {
      rlx::Graph g = rlx::parse_graph(gr.ir, "bench.rlx");
      Result c = measure(cpu, g, "compiled", runs);
      Result i = measure(cpu, g, "interpret", runs);
      fmt::print("{:<32} {:>11.2f} {:>11.2f} {:>7.2f} {:>12.2f} {:>12.2f} {:>10.1f} ms {:>10.2f} ms\n",
                 gr.name, c.exe_us, i.exe_us, c.exe_us / i.exe_us, c.model_us, i.model_us,
                 c.compile_cold_ms, c.compile_warm_ms);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "rlx_bench_cpu_overhead: {}\n", e.what());
    fs::remove_all(cache);
    return 1;
  }
  fs::remove_all(cache);
  return 0;
}
