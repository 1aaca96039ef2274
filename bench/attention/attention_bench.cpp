// One decode step's attention over every layer's KV cache, f32 against f16 and bf16 caches, in
// interleaved rounds (the machine is shared and noisy: the median and the fastest of each are
// reported). The shape is Gemma 3 270M's (18 layers, 4 query heads on 1 kv head of 256); each
// layer has its own cache, so a step streams them as a model does. Threads: all of oneTBB's, or
// RLX_BENCH_THREADS.
#include <fmt/format.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "nn_attention.h"
#include "rlx/core/half.h"

using namespace rlx;
using namespace rlx::cpu;

namespace {

constexpr int64_t kLayers = 18, kHeads = 4, kKvHeads = 1, kHeadDim = 256;
constexpr int kRounds = 7, kStepsPerRound = 50;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every layer's K and V [kKvHeads, T, kHeadDim] as one element type.
struct Caches {
  KvElem elem;
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint16_t>> half;
  const void* data(size_t i) const {
    return elem == KvElem::kF32 ? static_cast<const void*>(f32[i].data()) : half[i].data();
  }
};

Caches make_caches(KvElem elem, int64_t t, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  Caches c{elem, {}, {}};
  for (int64_t i = 0; i < 2 * kLayers; ++i) {
    std::vector<float> v(static_cast<size_t>(kKvHeads * t * kHeadDim));
    for (float& x : v) x = u(rng);
    if (elem == KvElem::kF32) {
      c.f32.push_back(std::move(v));
      continue;
    }
    std::vector<uint16_t> h;
    for (float x : v) h.push_back(elem == KvElem::kF16 ? f32_to_f16(x) : f32_to_bf16(x));
    c.half.push_back(std::move(h));
  }
  return c;
}

const char* name(KvElem e) {
  return e == KvElem::kF32 ? "f32" : e == KvElem::kF16 ? "f16" : "bf16";
}

}  // namespace

int main() {
  std::unique_ptr<tbb::global_control> threads;
  if (const char* n = std::getenv("RLX_BENCH_THREADS"))
    threads = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    std::atoi(n));
  fmt::print("attention of one decode step, {} layers, {} query heads on {} kv head(s) of {}, {}\n",
             kLayers, kHeads, kKvHeads, kHeadDim, nn_simd().name);
  fmt::print("{:>6} {:>5} {:>12} {:>12} {:>14}\n", "keys", "cache", "median us", "fastest us",
             "cache MB/step");
  std::mt19937 rng(1);
  for (int64_t t : {64, 320, 640, 2048}) {
    std::vector<Caches> caches;
    for (KvElem e : {KvElem::kF32, KvElem::kF16, KvElem::kBF16})
      caches.push_back(make_caches(e, t, rng));
    std::vector<float> q(kHeads * kHeadDim), out(kHeads * kHeadDim);
    for (float& x : q) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    std::vector<std::vector<double>> times(caches.size());
    for (int round = 0; round < kRounds; ++round)
      for (size_t c = 0; c < caches.size(); ++c) {
        AttentionShape sh{1, kHeads, kKvHeads, 1, t, kHeadDim, kHeadDim};
        sh.scale = 1.0f / 16;
        sh.k_elem = sh.v_elem = caches[c].elem;
        for (int step = 0; step <= kStepsPerRound; ++step) {
          const double t0 = now();
          for (int64_t l = 0; l < kLayers; ++l)
            attention(sh, q.data(), caches[c].data(2 * l), caches[c].data(2 * l + 1), out.data(),
                      nn_simd());
          if (step > 0) times[c].push_back(now() - t0);  // the first of a round warms the caches
        }
      }
    for (size_t c = 0; c < caches.size(); ++c) {
      std::vector<double>& v = times[c];
      std::sort(v.begin(), v.end());
      const double bytes = 2.0 * kLayers * kKvHeads * t * kHeadDim * kv_elem_size(caches[c].elem);
      fmt::print("{:>6} {:>5} {:>12.1f} {:>12.1f} {:>14.2f}\n", t, name(caches[c].elem),
                 1e6 * v[v.size() / 2], 1e6 * v.front(), bytes / 1e6);
    }
  }
  return 0;
}
