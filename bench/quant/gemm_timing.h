// What the GEMM benches of this folder share (int8_gemm_bench.cpp, bf16_gemm_bench.cpp): the
// peak a loop of independent instructions reaches on every thread at once, the rate of a product
// timed after a real warm-up, and their few options.
#pragma once
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace rlx::bench {

using Clock = std::chrono::steady_clock;

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// G(op)/s of `threads` threads each running `loop(iters)` at once (loop returns the ops it did);
// the median of five.
template <typename Loop>
double peak_rate(int threads, const Loop& loop) {
  const int64_t iters = 20'000'000;
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    std::vector<std::thread> ts;
    std::vector<double> ops(threads);
    const auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { ops[t] = loop(iters); });
    for (auto& t : ts) t.join();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    for (double o : ops) total += o;
    runs.push_back(total / s / 1e9);
  }
  return median(runs);
}

// G(op)/s of `once`, which does `ops` operations, from the median call.
template <typename F>
double product_rate(const F& once, double ops) {
  // 50 ms of warm-up, not a few calls: TBB starts its worker at the first shape's first call,
  // and on the 2-vCPU test machine the next 2-6 ms (30-120 calls at M = 128) still ran at one
  // thread's speed before the worker ran beside the main thread.
  const auto warm_until = Clock::now() + std::chrono::milliseconds(50);
  for (int i = 0; i < 3 || Clock::now() < warm_until; ++i) once();
  // About 0.2 s a shape (2e11 ops at ~900 G/s), so that a burst of other work on the machine
  // moves the median less than it did over the few ms timed before.
  const int64_t reps = std::clamp<int64_t>(static_cast<int64_t>(2e11 / ops), 20, 2000);
  std::vector<double> t;
  for (int64_t i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    once();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return ops / median(t) / 1e9;
}

// --threads N and --rows M,... (the products' row counts: batch x seq).
struct GemmBenchOptions {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int64_t> rows = {128, 1024, 4096};  // batch x seq: 1x128, 8x128, 32x128
};

inline GemmBenchOptions parse_gemm_bench_options(int argc, char** argv) {
  GemmBenchOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") o.threads = std::stoi(v);
    if (k == "--rows") {
      o.rows.clear();
      for (size_t p = 0; p < v.size();) {
        const size_t e = v.find(',', p);
        o.rows.push_back(std::stoll(v.substr(p, e - p)));
        p = e == std::string::npos ? v.size() : e + 1;
      }
    }
  }
  return o;
}

// all-MiniLM-L6-v2's Linear layers as (N, K): q/k/v/o (384 x 384), FFN up (1536 x 384), down
// (384 x 1536).
inline constexpr int64_t kMiniLmShapes[3][2] = {{384, 384}, {1536, 384}, {384, 1536}};

}  // namespace rlx::bench
