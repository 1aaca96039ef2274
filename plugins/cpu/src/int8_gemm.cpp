// The int8 GEMM's ISA choice, weight packing, activation rounding, portable kernel and thread
// split (int8_gemm.h); the SIMD kernels are in int8_gemm_avx512.cpp and int8_gemm_avx2.cpp.
#include "int8_gemm.h"

#include <fmt/format.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/quantize.h"

namespace rlx::cpu {

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::kAvx512Vnni:
      return "avx512vnni";
    case Int8Isa::kAvx2:
      return "avx2";
    default:
      return "portable";
  }
}

bool int8_isa_supported(Int8Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (isa == Int8Isa::kAvx512Vnni)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  if (isa == Int8Isa::kAvx2) return __builtin_cpu_supports("avx2");
  return true;
#else
  return isa == Int8Isa::kPortable;
#endif
}

namespace {

constexpr Int8Isa kAll[] = {Int8Isa::kAvx512Vnni, Int8Isa::kAvx2, Int8Isa::kPortable};

Int8Isa initial_isa() {
  const char* env = std::getenv("RLX_CPU_INT8_ISA");
  if (!env || !*env) {
    for (Int8Isa isa : kAll)
      if (int8_isa_supported(isa)) return isa;
  }
  for (Int8Isa isa : kAll) {
    if (std::string(env) != int8_isa_name(isa)) continue;
    if (!int8_isa_supported(isa))
      throw_user_error(fmt::format(
          "RLX_CPU_INT8_ISA={} but this CPU lacks it; unset it or choose avx2 or portable", env));
    return isa;
  }
  throw_user_error(
      fmt::format("RLX_CPU_INT8_ISA={} is not one of avx512vnni, avx2, portable", env));
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

}  // namespace

Int8Isa int8_isa() {
  return static_cast<Int8Isa>(isa_slot().load(std::memory_order_relaxed));
}

void set_int8_isa(Int8Isa isa) {
  if (!int8_isa_supported(isa))
    throw_user_error(fmt::format("this CPU cannot run the {} int8 GEMM", int8_isa_name(isa)));
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

PackedInt8W pack_int8_weights(const int8_t* w, const float* scale, const float* bias, int64_t n,
                              int64_t k) {
  PackedInt8W p;
  p.n = n, p.k = k, p.kp = (k + 3) / 4 * 4, p.panels = (n + 15) / 16;
  p.data.assign(static_cast<size_t>(p.panels * p.kp * 16), 0);
  p.colsum.assign(static_cast<size_t>(p.panels * 16), 0);
  p.scale.assign(static_cast<size_t>(p.panels * 16), 0.0f);
  p.bias.assign(static_cast<size_t>(p.panels * 16), 0.0f);
  for (int64_t c = 0; c < n; ++c) {
    int8_t* panel = p.data.data() + (c / 16) * p.kp * 16;
    const int64_t lane = c % 16;
    int32_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int8_t v = w[c * k + i];
      panel[(i / 4) * 64 + lane * 4 + i % 4] = v;
      sum += v;
    }
    p.colsum[c] = sum;
    p.scale[c] = scale[c];
    if (bias) p.bias[c] = bias[c];
  }
  return p;
}

void quantize_rows_u8(const float* x, int64_t ldx, int64_t m0, int64_t m1, int64_t k,
                      const float* fixed_scale, const uint8_t* fixed_zero, U8RowBuffer& dst) {
#if defined(__x86_64__)
  const bool simd = int8_isa() == Int8Isa::kAvx512Vnni;
#else
  const bool simd = false;
#endif
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    quant::U8Params prm;
    if (fixed_scale) {
      prm.scale = *fixed_scale, prm.zero = *fixed_zero;
    } else {
      float lo = 0, hi = 0;
#if defined(__x86_64__)
      if (simd) detail::row_range_avx512(row, k, &lo, &hi);
#endif
      if (!simd)
        for (int64_t i = 0; i < k; ++i) lo = std::min(lo, row[i]), hi = std::max(hi, row[i]);
      prm = quant::u8_params(lo, hi);
    }
    dst.scale[m] = prm.scale;
    dst.zero[m] = prm.zero;
    uint8_t* q = dst.q.data() + m * dst.ld;
#if defined(__x86_64__)
    if (simd) {
      detail::quantize_row_u8_avx512(row, k, prm.scale, prm.zero, q);
      continue;
    }
#endif
    quant::quantize_u8(row, k, prm, q);
  }
}

namespace detail {

void int8_block_portable(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1,
                         int64_t p0, int64_t p1, float* y, int64_t ldy) {
  for (int64_t p = p0; p < p1; ++p) {
    const int8_t* panel = w.panel(p);
    for (int64_t m = m0; m < m1; ++m) {
      const uint8_t* a = x.q + m * x.ld;
      int32_t acc[16] = {};
      for (int64_t g = 0; g < w.kp / 4; ++g)
        for (int j = 0; j < 16; ++j)
          for (int t = 0; t < 4; ++t) acc[j] += a[g * 4 + t] * panel[g * 64 + j * 4 + t];
      int8_store16(w, x, m, p, acc, y + (m - m0) * ldy + (p - p0) * 16);
    }
  }
}

}  // namespace detail

void int8_gemm_block(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, float* y, int64_t ldy) {
  switch (int8_isa()) {
#if defined(__x86_64__)
    case Int8Isa::kAvx512Vnni:
      return detail::int8_block_avx512vnni(w, x, m0, m1, p0, p1, y, ldy);
    case Int8Isa::kAvx2:
      return detail::int8_block_avx2(w, x, m0, m1, p0, p1, y, ldy);
#endif
    default:
      return detail::int8_block_portable(w, x, m0, m1, p0, p1, y, ldy);
  }
}

void int8_gemm(const PackedInt8W& w, const Int8Rows& x, int64_t M, float* y, int64_t ldy) {
  // Tasks of up to 64 rows x 4 panels (64 columns): a task's weights (kp * 64 bytes) stay in L2
  // while its rows pass over them.
  const int64_t rows = M >= 64 ? 64 : M, cols = 4;
  tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, M, rows, 0, w.panels, cols),
                    [&](const tbb::blocked_range2d<int64_t>& r) {
                      const int64_t m0 = r.rows().begin(), p0 = r.cols().begin();
                      int8_gemm_block(w, x, m0, r.rows().end(), p0, r.cols().end(),
                                      y + m0 * ldy + p0 * 16, ldy);
                    });
}

}  // namespace rlx::cpu
