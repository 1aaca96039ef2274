// The int8 GEMM of QMatMul (plugins/cpu/src/int8_gemm*.cpp) against the peak of its ISA measured
// in the same run: a loop of independent vpdpbusd (64 u8 x s8 products each), or on AMX of
// TDPBUSD (16,384), on every thread. of_peak is against the ISA the product ran on. The
// shapes are all-MiniLM-L6-v2's four Linear layers at batch x seq rows.
//   cmake --build build --target rlx_bench_int8_gemm
//   build/bench/quant/rlx_bench_int8_gemm [--threads N] [--rows M,...]   (JSON on stdout)
#include <fmt/format.h>
#include <immintrin.h>
#include <tbb/global_control.h>

#include <random>
#include <vector>

#include "amx_tiles.h"
#include "gemm_timing.h"
#include "int8_gemm.h"

namespace {

using rlx::bench::peak_rate;

// 16 independent accumulator chains, so the loop is bound by vpdpbusd's throughput.
__attribute__((target("avx512f,avx512vnni"), noinline)) double vnni_loop(int64_t iters) {
  constexpr int kChains = 16;
  __m512i acc[kChains];
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(2);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  }
  int32_t s = 0;
  for (int c = 0; c < kChains; ++c) s += _mm512_reduce_add_epi32(acc[c]);
  if (s == 12345) std::puts("");
  return double(iters) * kChains * 64 * 2;  // ops: a multiply and an add per product
}

// Four independent TDPBUSD chains (16 x 16 x 64 products each) on tiles that stay loaded, so the
// loop is bound by the AMX unit's throughput.
__attribute__((target("amx-tile,amx-int8"), noinline)) double amx_loop(int64_t iters) {
  rlx::cpu::amx::configure(16, 16);  // every tile 16 rows of 64 bytes
  alignas(64) static thread_local int8_t bytes[16 * 64] = {1};
  _tile_loadd(4, bytes, 64);
  _tile_loadd(5, bytes, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters / 16; ++it) {
    _tile_dpbusd(0, 4, 5);
    _tile_dpbusd(1, 4, 5);
    _tile_dpbusd(2, 4, 5);
    _tile_dpbusd(3, 4, 5);
  }
  _tile_release();
  return double(iters / 16) * 4 * 16 * 16 * 64 * 2;
}

// GOP/s of the whole product (activation rounding included) at M x N x K.
double bench(int64_t M, int64_t N, int64_t K) {
  std::mt19937 rng(1);
  std::normal_distribution<float> val(0, 1);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<float> x(M * K), scale(N, 0.01f), y(M * N);
  std::vector<int8_t> w(N * K);
  for (auto& v : x) v = val(rng);
  for (auto& v : w) v = static_cast<int8_t>(q(rng));
  const rlx::cpu::PackedInt8W packed = rlx::cpu::pack_int8_weights(w.data(), scale.data(), nullptr, N, K);
  // QMatMul's own call: the rounding of each block of rows is done by the task that multiplies
  // it, in the product's parallel region.
  rlx::cpu::U8RowBuffer rows;
  return rlx::bench::product_rate(
      [&] {
        rlx::cpu::int8_matmul_f32(packed, x.data(), K, M, nullptr, nullptr, rows, y.data(), N);
      },
      2.0 * M * N * K);
}

}  // namespace

int main(int argc, char** argv) {
  const rlx::bench::GemmBenchOptions opt = rlx::bench::parse_gemm_bench_options(argc, argv);
  const int threads = opt.threads;
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
  const bool vnni = rlx::cpu::int8_isa_supported(rlx::cpu::Int8Isa::kAvx512Vnni);
  // The peak of the ISA the product runs on: AMX's tiles where the CPU grants them.
  const bool amx = rlx::cpu::int8_isa() == rlx::cpu::Int8Isa::kAmx;
  const double vnni_gops = vnni ? peak_rate(threads, vnni_loop) : 0.0;
  const double amx_gops = amx ? peak_rate(threads, amx_loop) : 0.0;
  const double peak = amx ? amx_gops : vnni_gops;
  fmt::print(
      "{{\"isa\": \"{}\", \"threads\": {}, \"vnni_peak_gops\": {:.1f}, \"amx_peak_gops\": "
      "{:.1f}, \"results\": [",
      rlx::cpu::int8_isa_name(rlx::cpu::int8_isa()), threads, vnni_gops, amx_gops);
  bool first = true;
  for (int64_t m : opt.rows)
    for (const auto& s : rlx::bench::kMiniLmShapes) {
      const double gops = bench(m, s[0], s[1]);
      fmt::print("{}{{\"M\": {}, \"N\": {}, \"K\": {}, \"gops\": {:.1f}, \"of_peak\": {:.3f}}}",
                 first ? "" : ", ", m, s[0], s[1], gops, peak > 0 ? gops / peak : 0.0);
      first = false;
    }
  fmt::print("]}}\n");
}
