// Per-call time of rlx's C++ API on x*y+x over 16 floats (bench/python_overhead.py's graph), so
// that what the Python binding adds can be told from what the runtime costs:
//   run        CompiledModel::run(inputs): named tensors in, outputs allocated (Python's
//              compiled(**inputs) does this plus turning arrays into tensors and back)
//   run_into   CompiledModel::run(inputs, outputs) into the same output tensors every call
//              (Python's compiled.run(inputs, outputs={...}))
// Prints one JSON line: {"run_us": ..., "run_into_us": ...}, each the median of 7 batches.
//   rlx_bench_api_overhead [calls per batch, default 20000]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/registry/registry.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kGraph =
    "graph @t(%x: f32[16], %y: f32[16]) {\n  %a = mul(%x, %y) : f32[16]\n"
    "  %b = add(%a, %x) : f32[16]\n  return %b\n}\n";

template <typename F>
double per_call_us(int calls, F&& f) {
  f();
  std::vector<double> batches;
  for (int rep = 0; rep < 7; ++rep) {
    auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) f();
    batches.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  try {
    rlx::registry::Options o;
    o.plugin_paths = {RLX_BENCH_PLUGIN_DIR};
    o.build_legality = false;
    // Never destroyed: the target lives in the plugin's library (as in the CLI).
    static auto* reg = new rlx::registry::Registry(rlx::registry::Registry::discover(o));
    rlx::Session session(reg->target("cpu"));
    rlx::CompiledModel model = session.compile(rlx::parse_graph(kGraph, "overhead.rlx"));
    rlx::Tensor x(rlx::DType::kF32, {16}), y(rlx::DType::kF32, {16});
    for (int i = 0; i < 16; ++i) x.as<float>()[i] = static_cast<float>(i), y.as<float>()[i] = 2;
    rlx::NamedTensors inputs{{"x", x}, {"y", y}};
    // Checked once, so a broken build is not timed.
    rlx::NamedTensors out = model.run(inputs);
    for (int i = 0; i < 16; ++i)
      if (out.at("b").as<float>()[i] != 3.0f * static_cast<float>(i)) {
        fmt::print(stderr, "rlx_bench_api_overhead: wrong result at {}\n", i);
        return 1;
      }
    double run_us = per_call_us(calls, [&] { model.run(inputs); });
    double into_us = per_call_us(calls, [&] { model.run(inputs, out); });
    fmt::print("{{\"run_us\": {:.3f}, \"run_into_us\": {:.3f}}}\n", run_us, into_us);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rlx_bench_api_overhead: {}\n", e.what());
    return 1;
  }
  return 0;
}
