// Weight bytes per second of DequantMatMul's integer path at one row of activations (decode) and
// at 128 rows (prefill), per format, beside a plain read of as many bytes and in interleaved
// rounds (the machine is shared and noisy; medians are reported). Threads: all of oneTBB's, or
// RLX_BENCH_THREADS.
#include <fmt/format.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "qdot.h"
#include "rlx/core/half.h"

using namespace rlx;
using namespace rlx::cpu;
using quant::QType;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A plain read of n 256-byte lines: four independent 64-byte vector sums with the widest loads
// the CPU has (one clone per ISA, picked at load time) and the same prefetch distance as the
// products, so the loop waits on memory, not on its own instructions: the bandwidth figure the
// products are measured against.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
uint64_t
read_sum(const uint8_t* p, size_t n) {
  using V = uint64_t __attribute__((vector_size(64)));
  V s[4] = {};
  for (size_t i = 0; i < n; ++i, p += 256) {
    __builtin_prefetch(p + 3072);
    __builtin_prefetch(p + 3072 + 128);
    for (int j = 0; j < 4; ++j) {
      V v;
      std::memcpy(&v, p + 64 * j, 64);
      s[j] += v;
    }
  }
  const V t = s[0] + s[1] + s[2] + s[3];
  uint64_t u = 0;
  for (int j = 0; j < 8; ++j) u += t[j];
  return u;
}

struct Case {
  QType t;
  int64_t n, k;  // weight rows and columns (Gemma 3 270M shapes)
};

}  // namespace

int main() {
  int threads = std::getenv("RLX_BENCH_THREADS") ? std::atoi(std::getenv("RLX_BENCH_THREADS")) : 2;
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
  const Case cases[] = {{QType::kQ8_0, 262144, 640}, {QType::kQ5_0, 2048, 640},
                        {QType::kQ4_K, 640, 1024},   {QType::kQ6_K, 640, 2048},
                        {QType::kQ4_0, 8192, 640},   {QType::kQ5_K, 2048, 1024}};
  std::mt19937 rng(1);
  struct Data {
    std::vector<uint8_t> w, xq;
    std::vector<float> y;
    int64_t rb, stride;
  };
  std::vector<Data> data;
  for (const Case& c : cases) {
    Data d;
    d.rb = *quant::row_bytes(c.t, c.k);
    d.w.resize(static_cast<size_t>(c.n * d.rb));
    for (auto& b : d.w) b = static_cast<uint8_t>(rng() & 0x3F);  // finite f16 scales
    std::vector<float> x(static_cast<size_t>(128 * c.k), 0.5f);
    d.stride = static_cast<int64_t>(qdot_act_row_bytes(c.t, c.k));
    d.xq.resize(static_cast<size_t>(128 * d.stride));
    for (int m = 0; m < 128; ++m)
      qdot_quantize_row(c.t, x.data() + m * c.k, c.k, d.xq.data() + m * d.stride);
    d.y.resize(static_cast<size_t>(128 * c.n));
    data.push_back(std::move(d));
  }
  const std::vector<uint8_t>& big = data[0].w;
  auto read_all = [&] {
    std::atomic<uint64_t> total{0};
    tbb::parallel_for(tbb::blocked_range<size_t>(0, big.size() / 256, 1024), [&](auto r) {
      total += read_sum(big.data() + r.begin() * 256, r.end() - r.begin());
    });
    return total.load();
  };
  const int rounds = 9;
  std::vector<double> read_gbs;
  std::vector<std::vector<double>> dec(std::size(cases)), pre(std::size(cases)),
      dec32(std::size(cases));
  std::vector<float> xf(2048, 0.25f);
  uint64_t sink = 0;
  for (int r = 0; r < rounds; ++r) {
    double t0 = now();
    sink += read_all();
    read_gbs.push_back(big.size() / (now() - t0) / 1e9);
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      Data& d = data[i];
      auto run = [&](int64_t M) {
        double s = now();
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, c.n, M > 1 ? 16 : 64), [&](auto rr) {
          qdot_rows(c.t, d.w.data(), d.rb, rr.begin(), rr.end(), d.xq.data(), d.stride, M, c.k,
                    d.y.data(), c.n);
        });
        return now() - s;
      };
      const int reps = c.n > 100000 ? 1 : 50;
      double t = 0;
      for (int k = 0; k < reps; ++k) t += run(1);
      dec[i].push_back(d.w.size() * reps / t / 1e9);
      t = 0;
      for (int k = 0; k < reps; ++k) {
        double s = now();
        tbb::parallel_for(tbb::blocked_range<int64_t>(0, c.n, 64), [&](auto rr) {
          qdot_rows_f32(c.t, d.w.data(), d.rb, rr.begin(), rr.end(), xf.data(), c.k, 1, c.k,
                        d.y.data(), c.n);
        });
        t += now() - s;
      }
      dec32[i].push_back(d.w.size() * reps / t / 1e9);
      double tp = run(128);
      pre[i].push_back(2.0 * 128 * c.n * c.k / tp / 1e9);
    }
  }
  fmt::print("threads {}, isa {}, plain read {:.1f} GB/s (median of {})\n", threads,
             qdot_isa_name(qdot_isa()), median(read_gbs), rounds);
  fmt::print("{:8} {:>8} {:>6} {:>14} {:>10} {:>14} {:>16}\n", "format", "rows", "k",
             "q8 decode GB/s", "of read", "f32 decode GB/s", "q8 prefill GOP/s");
  for (size_t i = 0; i < std::size(cases); ++i)
    fmt::print("{:8} {:>8} {:>6} {:>14.1f} {:>9.0f}% {:>15.1f} {:>16.1f}\n",
               quant::info(cases[i].t).name, cases[i].n, cases[i].k, median(dec[i]),
               100 * median(dec[i]) / median(read_gbs), median(dec32[i]), median(pre[i]));
  return sink == 42 ? 1 : 0;
}
