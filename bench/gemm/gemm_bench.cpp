// rlx sgemm throughput (GFLOP/s) at square sizes and at the batch-1 shapes of
// all-MiniLM-L6-v2, next to an FMA-only loop that measures the peak the same threads reach.
// Prints one JSON object; bench/gemm/run.sh adds OpenBLAS (through NumPy) and the ratios.
//   rlx_bench_gemm [--threads 2] [--reps 7] [--sizes 256,512,1024,2048] [--openblas LIB]
//                  [--clock wall|cpu]   (cpu: process CPU time / threads)
// With --openblas, cblas_sgemm of that library (dlopen'ed; set OPENBLAS_NUM_THREADS to the same
// thread count) is timed the same way in the same process.
#include <dlfcn.h>
#include <fmt/format.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemm.h"

namespace {

// Wall clock, or with --clock cpu the process's CPU time divided by the thread count: on a
// machine other jobs share, time the scheduler gave to them is then not counted, while time our
// threads spend waiting for each other (spinning) still is.
bool g_cpu_clock = false;
int g_threads = 1;
struct Clock {
  using duration = std::chrono::duration<double>;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    if (!g_cpu_clock) return time_point(std::chrono::steady_clock::now().time_since_epoch());
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return time_point(duration((ts.tv_sec + ts.tv_nsec * 1e-9) / g_threads));
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Independent FMA chains, enough to cover latency x throughput on current cores (4 x 2 on
// Intel, 4 x 1 zmm on Zen 4). Returns flops done.
typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));

__attribute__((target("avx512f,fma"), noinline)) double fma_loop_avx512(int64_t iters) {
  constexpr int kChains = 16;
  V16 acc[kChains], m, a;
  for (int i = 0; i < 16; ++i) m[i] = 0.999999f, a[i] = 1e-7f;
  for (int c = 0; c < kChains; ++c) acc[c] = m * float(c);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += acc[c][0];
  if (s == 12345.0f) std::puts("");  // keep the result alive
  return double(iters) * kChains * 16 * 2;
}

__attribute__((target("avx2,fma"), noinline)) double fma_loop_avx2(int64_t iters) {
  constexpr int kChains = 16;
  V8 acc[kChains], m, a;
  for (int i = 0; i < 8; ++i) m[i] = 0.999999f, a[i] = 1e-7f;
  for (int c = 0; c < kChains; ++c) acc[c] = m * float(c);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * m + a;
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += acc[c][0];
  if (s == 12345.0f) std::puts("");
  return double(iters) * kChains * 8 * 2;
}

// GFLOP/s of `threads` threads each running the FMA loop at once.
double fma_peak(int threads, bool avx512) {
  const int64_t iters = 20'000'000;
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    std::vector<std::thread> ts;
    std::vector<double> flops(threads);
    auto t0 = Clock::now();
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] { flops[t] = avx512 ? fma_loop_avx512(iters) : fma_loop_avx2(iters); });
    for (auto& t : ts) t.join();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    runs.push_back(total / s / 1e9);
  }
  return median(runs);
}

struct Result {
  std::string name;
  int64_t M, N, K;
  double gflops, gflops_prepacked, openblas = 0, gflops_prepacked_cold = 0;
};

// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                         float, float*, int);
SgemmFn g_sgemm = nullptr;

std::vector<float> random_floats_for_bench(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// `gelu`: with the epilogue MiniLM's FFN up-projection runs (bias, then GELU in its erf form).
// `ta` / `tb`: A stored [K, M] / B stored [N, K] and read through strides, as a training step's
// products read a weight (x W^T) or an activation (dW = g^T x) without copying it.
// `momentum`: the epilogue of a weight gradient feeding SGD with momentum, mu * m + acc, m read
// from a [M, N] tensor as the training step's fused update reads it.
Result bench_gemm(const std::string& name, int64_t M, int64_t N, int64_t K, int reps,
                  bool gelu = false, bool ta = false, bool tb = false, bool momentum = false) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(M * K), b(K * N), c(M * N);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  rlx::cpu::GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data();
  g.a = ta ? rlx::cpu::MatView{a.data(), rlx::DType::kF32, 1, M}
           : rlx::cpu::MatView{a.data(), rlx::DType::kF32, K, 1};
  g.b = tb ? rlx::cpu::MatView{b.data(), rlx::DType::kF32, 1, K}
           : rlx::cpu::MatView{b.data(), rlx::DType::kF32, N, 1};
  std::vector<float> bias(N);
  for (auto& x : bias) x = u(rng);
  const rlx::cpu::GemmEpilogue ep = rlx::cpu::GemmEpilogue::bias_gelu_residual(
      bias.data(), rlx::cpu::GemmEpilogue::Gelu::kErf, nullptr, 0);
  if (gelu) g.epilogue = &ep;
  std::vector<float> mom(M * N);
  for (auto& x : mom) x = u(rng);
  rlx::cpu::GemmEpilogue mep;
  {
    int acc = mep.acc();
    int m = mep.binary(rlx::cpu::EpOp::kMul, mep.load(mom.data(), N, 1), mep.constant(0.9f));
    mep.binary(rlx::cpu::EpOp::kAdd, m, acc);
  }
  if (momentum) g.epilogue = &mep;
  const double flops = 2.0 * M * N * K;
  // Enough calls per timing (about 10 ms of work) that small shapes are dominated neither by the
  // clock nor by the oneTBB worker waking up for the first call (with a tenth of that, 256^3 came
  // out at either ~110 or ~220 GFLOP/s from one run to the next).
  const int inner = std::max<int>(1, int(2e9 / flops));
  auto time_it = [&](const rlx::cpu::GemmArgs& args) {
    rlx::cpu::gemm(args);  // warm-up: scratch, pages, caches
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) rlx::cpu::gemm(args);
      runs.push_back(flops * inner / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
    }
    return median(runs);
  };
  Result res{name, M, N, K, time_it(g), 0};
  rlx::cpu::PackedB pb = rlx::cpu::pack_b(g.b, K, N, false);
  g.packed = &pb;
  res.gflops_prepacked = time_it(g);
  // Prepacked weights as a model sees them: a different B every call, 64 MB of them in turn, so
  // B comes from memory rather than from the cache the previous call left it in.
  {
    const int64_t copies = std::max<int64_t>(2, (int64_t(64) << 20) / (4 * K * N));
    std::vector<rlx::cpu::PackedB> cold;
    for (int64_t i = 0; i < copies; ++i) cold.push_back(rlx::cpu::pack_b(g.b, K, N, false));
    std::vector<double> runs;
    int64_t next = 0;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) {
        g.packed = &cold[next++ % copies];
        rlx::cpu::gemm(g);
      }
      runs.push_back(flops * inner / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
    }
    res.gflops_prepacked_cold = median(runs);
    g.packed = &pb;
  }
  if (g_sgemm && !ta && !tb) {
    auto call = [&] {
      g_sgemm(101, 111, 111, int(M), int(N), int(K), 1.0f, a.data(), int(K), b.data(), int(N), 0.0f,
              c.data(), int(N));  // row-major, no transposes
    };
    call();
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) {
      auto t0 = Clock::now();
      for (int i = 0; i < inner; ++i) call();
      runs.push_back(flops * inner / std::chrono::duration<double>(Clock::now() - t0).count() / 1e9);
    }
    res.openblas = median(runs);
  }
  return res;
}

// A different A every call, 64 MB of them in turn: a training step's batch, which comes from
// memory each step. B stays fixed, or with `rewrite_b` is rewritten between calls (untimed) by
// a loop split over the threads by its rows, as a step's update writes the weight the next
// step's forward reads: B then comes from whichever core's cache wrote each row (decision 78:
// the split over K).
Result bench_gemm_cold_a(const std::string& name, int64_t M, int64_t N, int64_t K, int reps,
                         bool rewrite_b = false) {
  const int64_t copies = std::max<int64_t>(2, (int64_t(64) << 20) / (4 * M * K));
  std::vector<std::vector<float>> as;
  for (int64_t i = 0; i < copies; ++i)
    as.push_back(random_floats_for_bench(M * K, unsigned(i + 1)));
  std::vector<float> b = random_floats_for_bench(K * N, 99), c(M * N);
  rlx::cpu::GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.ldc = N, g.c = c.data();
  g.b = {b.data(), rlx::DType::kF32, N, 1};
  const double flops = 2.0 * M * N * K;
  const int inner = std::max<int>(1, int(2e9 / flops));
  std::vector<double> runs;
  int64_t next = 0;
  for (int r = 0; r < reps; ++r) {
    double spent = 0;
    for (int i = 0; i < inner; ++i) {
      if (rewrite_b)
        tbb::parallel_for(int64_t{0}, K, [&](int64_t k) {
          float* row = b.data() + k * N;
          for (int64_t j = 0; j < N; ++j) row[j] = row[j] * 0.999f + 1e-4f;
        });
      g.a = {as[next++ % copies].data(), rlx::DType::kF32, K, 1};
      const auto t0 = Clock::now();
      rlx::cpu::gemm(g);
      spent += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    runs.push_back(flops * inner / spent / 1e9);
  }
  return Result{name, M, N, K, median(runs), 0};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 7;
  bool peak_only = false;  // `--only peak`: the FMA peak alone, for bench/run.py's MiniLM bounds
  std::vector<int64_t> sizes = {256, 512, 1024, 2048};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--threads") threads = std::atoi(v.c_str());
    else if (k == "--reps") reps = std::atoi(v.c_str());
    else if (k == "--clock") g_cpu_clock = v == "cpu";
    else if (k == "--only" && v == "peak") peak_only = true;
    else if (k == "--openblas") {
      void* lib = dlopen(v.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) g_sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cblas_sgemm"));
      if (!g_sgemm) {
        fmt::print(stderr, "cannot load cblas_sgemm from {}: {}\n", v, lib ? "no such symbol" : dlerror());
        return 2;
      }
    }
    else if (k == "--sizes") {
      sizes.clear();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        sizes.push_back(std::atoll(v.substr(p, q - p).c_str()));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  g_threads = std::max(threads, 1);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  // Without AVX2+FMA there is no FMA loop to run; the peak is reported as 0.
  const bool fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  double peak = avx512 || fma ? fma_peak(threads, avx512) : 0.0;
  std::vector<Result> results;
  if (peak_only) sizes.clear();
  for (int64_t n : sizes) results.push_back(bench_gemm(fmt::format("square_{}", n), n, n, n, reps));
  // all-MiniLM-L6-v2: sequence 32 and 128 at batch 1, and 1024 rows (sequence 32 at batch 32,
  // where the products are largest); hidden 384, FFN 1536.
  for (int64_t seq : {32, 128, 1024}) {
    if (peak_only) break;
    const std::string rows = seq == 1024 ? "s32b32" : fmt::format("s{}", seq);
    results.push_back(bench_gemm(fmt::format("minilm_{}_qkvo", rows), seq, 384, 384, reps));
    results.push_back(bench_gemm(fmt::format("minilm_{}_ffn_up", rows), seq, 1536, 384, reps));
    results.push_back(
        bench_gemm(fmt::format("minilm_{}_ffn_up_bias_gelu", rows), seq, 1536, 384, reps, true));
    results.push_back(bench_gemm(fmt::format("minilm_{}_ffn_down", rows), seq, 384, 1536, reps));
  }
  // issue 16's MLP step (784-128-10, batch 128): the first layer's forward x W1^T and its weight
  // gradient g^T x, the two products that hold nearly all of the step's multiply-adds.
  if (!peak_only) {
    results.push_back(bench_gemm("mlp_b128_fwd_x_w1t", 128, 128, 784, reps, false, false, true));
    results.push_back(bench_gemm("mlp_b128_fwd_x_w1", 128, 128, 784, reps));
    results.push_back(bench_gemm_cold_a("mlp_b128_fwd_x_w1_cold_x", 128, 128, 784, reps));
    results.push_back(
        bench_gemm_cold_a("mlp_b128_fwd_x_w1_cold_x_written_w", 128, 128, 784, reps, true));
    results.push_back(bench_gemm("mlp_b128_fwd_h_w2", 128, 10, 128, reps));
    results.push_back(bench_gemm("mlp_b128_dw1_gt_x", 128, 784, 128, reps, false, true, false));
    results.push_back(
        bench_gemm("mlp_b128_dw1_gt_x_momentum", 128, 784, 128, reps, false, true, false, true));
    // The same weight gradient when the step keeps W1 as [in, out] (no transpose for the
    // forward): x^T g, A read through strides.
    results.push_back(
        bench_gemm("mlp_b128_dw1t_xt_g_momentum", 784, 128, 128, reps, false, true, false, true));
  }
  fmt::print("{{\"isa\": \"{}\", \"threads\": {}, \"fma_peak_gflops\": {:.1f}, \"results\": [",
             rlx::cpu::gemm_isa_name(rlx::cpu::gemm_isa()), threads, peak);
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    fmt::print("{}\n  {{\"name\": \"{}\", \"M\": {}, \"N\": {}, \"K\": {}, \"gflops\": {:.1f}, "
               "\"gflops_prepacked\": {:.1f}, \"gflops_prepacked_cold\": {:.1f}{}}}",
               i ? "," : "", r.name, r.M, r.N, r.K, r.gflops, r.gflops_prepacked, r.gflops_prepacked_cold,
               g_sgemm ? fmt::format(", \"openblas_cblas\": {:.1f}", r.openblas) : "");
  }
  fmt::print("]}}\n");
}
