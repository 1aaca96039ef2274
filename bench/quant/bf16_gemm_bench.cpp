// The bf16 GEMM (plugins/cpu/src/gemm_bf16*.cpp, what `--precision amp-bf16` products run on)
// against the peaks measured in the same run: loops of independent VDPBF16PS (32 bf16 products
// each) and, where the CPU grants AMX, TDPBF16PS (16,384), on every thread; and beside it the f32
// GEMM on the same shapes with the FMA peak, so the table shows what bf16 buys over f32. The
// shapes are all-MiniLM-L6-v2's Linear layers at batch x seq rows.
//   cmake --build build --target rlx_bench_bf16_gemm
//   build/bench/quant/rlx_bench_bf16_gemm [--threads N] [--rows M,...]   (JSON on stdout)
#include <fmt/format.h>
#include <immintrin.h>
#include <tbb/global_control.h>

#include <random>
#include <vector>

#include "amx_tiles.h"
#include "gemm.h"
#include "gemm_bf16.h"
#include "gemm_timing.h"
#include "rlx/core/half.h"

namespace {

using rlx::bench::peak_rate;
using rlx::cpu::Bf16Unit;

__attribute__((target("avx512f,fma"), noinline)) double fma_loop(int64_t iters) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += _mm512_reduce_add_ps(acc[c]);
  if (s == 12345.f) std::puts("");
  return double(iters) * kChains * 16 * 2;
}

__attribute__((target("avx512f,avx512bf16"), noinline)) double dot_loop(int64_t iters) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3F80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(float(c));
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
  }
  float s = 0;
  for (int c = 0; c < kChains; ++c) s += _mm512_reduce_add_ps(acc[c]);
  if (s == 12345.f) std::puts("");
  return double(iters) * kChains * 32 * 2;
}

__attribute__((target("amx-tile,amx-bf16"), noinline)) double amx_loop(int64_t iters) {
  rlx::cpu::amx::configure(16, 16);
  alignas(64) static thread_local uint16_t bits[16 * 32] = {0x3F80};
  _tile_loadd(4, bits, 64);
  _tile_loadd(5, bits, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters / 16; ++it) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  _tile_release();
  return double(iters / 16) * 4 * 16 * 16 * 32 * 2;
}

struct Operands {
  std::vector<float> x, w;         // x [M, K], w [N, K] (Linear's layout)
  std::vector<uint16_t> x16, w16;  // the same values rounded to bf16
};

Operands operands(int64_t M, int64_t N, int64_t K) {
  std::mt19937 rng(1);
  std::normal_distribution<float> val(0, 1);
  Operands o;
  o.x.resize(M * K), o.w.resize(N * K);
  for (auto& v : o.x) v = val(rng);
  for (auto& v : o.w) v = val(rng);
  for (float v : o.x) o.x16.push_back(rlx::f32_to_bf16(v));
  for (float v : o.w) o.w16.push_back(rlx::f32_to_bf16(v));
  return o;
}

// GFLOP/s of the bf16 GEMM on `unit`, bf16 results (what an amp-bf16 Linear stores).
double bench_bf16(Bf16Unit unit, const Operands& o, int64_t M, int64_t N, int64_t K) {
  using namespace rlx::cpu;
  const PackedBf16B packed = pack_bf16_b(MatView{o.w16.data(), rlx::DType::kBF16, 1, K}, K, N);
  std::vector<uint16_t> y(M * N);
  const MatView a{o.x16.data(), rlx::DType::kBF16, K, 1};
  return rlx::bench::product_rate(
      [&] { bf16_gemm(unit, a, M, packed, nullptr, rlx::DType::kBF16, y.data(), N); },
      2.0 * M * N * K);
}

// GFLOP/s of the f32 GEMM with the weights packed once, as the cpu target runs an f32 Linear.
double bench_f32(const Operands& o, int64_t M, int64_t N, int64_t K) {
  using namespace rlx::cpu;
  const PackedB packed = pack_b(MatView{o.w.data(), rlx::DType::kF32, 1, K}, K, N, false);
  std::vector<float> y(M * N);
  GemmArgs g;
  g.M = M, g.N = N, g.K = K, g.ldc = N;
  g.a = MatView{o.x.data(), rlx::DType::kF32, K, 1};
  g.packed = &packed;
  g.c = y.data();
  return rlx::bench::product_rate([&] { gemm(g); }, 2.0 * M * N * K);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rlx::cpu;
  const rlx::bench::GemmBenchOptions opt = rlx::bench::parse_gemm_bench_options(argc, argv);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, opt.threads);
  std::vector<Bf16Unit> units;
  if (amx_bf16_enabled()) units.push_back(Bf16Unit::kAmx);
  if (avx512_bf16_enabled()) units.push_back(Bf16Unit::kAvx512Bf16);
  const double fma = peak_rate(opt.threads, fma_loop);
  const double dot = avx512_bf16_enabled() ? peak_rate(opt.threads, dot_loop) : 0.0;
  const double amx = amx_bf16_enabled() ? peak_rate(opt.threads, amx_loop) : 0.0;
  fmt::print(
      "{{\"threads\": {}, \"fma_peak_gflops\": {:.1f}, \"avx512_bf16_peak_gflops\": {:.1f}, "
      "\"amx_bf16_peak_gflops\": {:.1f}, \"results\": [",
      opt.threads, fma, dot, amx);
  bool first = true;
  for (int64_t m : opt.rows)
    for (const auto& s : rlx::bench::kMiniLmShapes) {
      const int64_t N = s[0], K = s[1];
      const Operands o = operands(m, N, K);
      const double f32 = bench_f32(o, m, N, K);
      fmt::print(
          "{}{{\"M\": {}, \"N\": {}, \"K\": {}, \"f32_gflops\": {:.1f}, \"f32_of_peak\": "
          "{:.3f}",
          first ? "" : ", ", m, N, K, f32, f32 / fma);
      for (Bf16Unit unit : units) {
        const double r = bench_bf16(unit, o, m, N, K);
        const char* key = unit == Bf16Unit::kAmx ? "amx" : "avx512_bf16";
        fmt::print(", \"{}_gflops\": {:.1f}, \"{}_of_peak\": {:.3f}", key, r, key,
                   r / (unit == Bf16Unit::kAmx ? amx : dot));
      }
      fmt::print("}}");
      first = false;
    }
  fmt::print("]}}\n");
}
