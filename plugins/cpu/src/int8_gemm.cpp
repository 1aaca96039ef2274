// The int8 GEMM's ISA choice, weight packing, activation rounding, portable kernel and thread
// split (int8_gemm.h); the SIMD kernels are in int8_gemm_avx512.cpp and int8_gemm_avx2.cpp.
#include "int8_gemm.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/quantize.h"

namespace rlx::cpu {

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::kAmx:
      return "amx";
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
  if (isa == Int8Isa::kAmx) return detail::amx_usable();
  return true;
#else
  return isa == Int8Isa::kPortable;
#endif
}

namespace {

constexpr Int8Isa kAll[] = {Int8Isa::kAmx, Int8Isa::kAvx512Vnni, Int8Isa::kAvx2,
                            Int8Isa::kPortable};

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
          "RLX_CPU_INT8_ISA={} but this CPU lacks it; unset it or choose one it has (avx2 and "
          "portable run anywhere on x86-64)",
          env));
    return isa;
  }
  throw_user_error(
      fmt::format("RLX_CPU_INT8_ISA={} is not one of amx, avx512vnni, avx2, portable", env));
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
  // Padding K to 64 on every AMX CPU, not only while amx is the chosen ISA: the other kernels
  // take any multiple of 4, so a later set_int8_isa never meets a packing it cannot read.
  const int64_t step = int8_isa_supported(Int8Isa::kAmx) ? 64 : 4;
  p.n = n, p.k = k, p.kp = (k + step - 1) / step * step, p.panels = (n + 15) / 16;
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
                      const float* fixed_scale, const uint8_t* fixed_zero, U8RowBuffer& dst,
                      const RowPrologue* pro) {
  std::vector<float> computed(pro ? static_cast<size_t>(k) : 0);
#if defined(__x86_64__)
  const Int8Isa isa = int8_isa();
  const bool simd = isa == Int8Isa::kAvx512Vnni || isa == Int8Isa::kAmx;
#else
  const bool simd = false;
#endif
  for (int64_t m = m0; m < m1; ++m) {
    const float* row = x + m * ldx;
    if (pro) {
      float* c = computed.data();
      if (pro->col_scale) {
#if defined(__x86_64__)
        if (simd) detail::scale_row_avx512(row, pro->col_scale, k, c);
#endif
        if (!simd)
          for (int64_t j = 0; j < k; ++j) c[j] = row[j] * pro->col_scale[j];
      } else {
        pro->other(m, row, c);
      }
      row = c;
    }
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
    std::memset(q + k, 0, static_cast<size_t>(dst.ld - k));
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
    case Int8Isa::kAmx:
      if (w.kp % 64 != 0) throw_internal_error("int8 weights packed without AMX's K padding");
      return detail::int8_block_amx(w, x, m0, m1, p0, p1, y, ldy);
    case Int8Isa::kAvx512Vnni:
      return detail::int8_block_avx512vnni(w, x, m0, m1, p0, p1, y, ldy);
    case Int8Isa::kAvx2:
      return detail::int8_block_avx2(w, x, m0, m1, p0, p1, y, ldy);
#endif
    default:
      return detail::int8_block_portable(w, x, m0, m1, p0, p1, y, ldy);
  }
}

namespace {

// How int8_gemm and int8_matmul_f32 cut the rows: blocks of whole register tiles (8 rows), about
// four per thread so that a late or busy thread is made up for, and at most 64 rows or 128 KiB
// of u8 rows and f32 results, so that the weights (0.6 MB for MiniLM's FFN) stay in a 1 MB L2
// beside them. (At M = 4096, N = 1536 blocks of 64 rows wrote 0.4 MB of results each and ran
// at 0.75 of the VNNI peak, blocks of 16 at 0.85.) When the rows give fewer than two blocks per
// thread (a short batch), the panels are split too.
struct RowSplit {
  int64_t rows = 0, blocks = 0;
  bool split_panels = false;
};

RowSplit row_split(int64_t M, const PackedInt8W& w) {
  const int64_t threads = std::max(1, tbb::this_task_arena::max_concurrency());
  const int64_t row_bytes = w.kp + 4 * w.n;
  // Whole register blocks: 8 rows for the vector kernels, 32 (two tiles) for AMX's. AMX's
  // blocks may be taller: its kernel reads each pair of weight panels once per block, and at
  // 16 times VNNI's rate that read, not the result's size, is what bounds it.
  const bool amx = int8_isa() == Int8Isa::kAmx;
  const int64_t unit = amx ? 32 : 8;
  const int64_t most = amx ? 128 : std::clamp<int64_t>((128 << 10) / row_bytes, 8, 64);
  RowSplit s;
  s.rows = std::min((M + 4 * threads - 1) / (4 * threads), most);
  s.rows = std::max<int64_t>(unit, s.rows / unit * unit);
  s.blocks = (M + s.rows - 1) / s.rows;
  s.split_panels = threads > 1 && s.blocks < 2 * threads && w.panels > 2;
  return s;
}

// Rows [m0, m1) (at most 128, row_split's largest block) x panels [p0, p1): straight into y, or
// through `sink` four panels (64 columns) at a time, in a scratch tile on the stack or in place
// in y (`at`), while the tile is still in L1.
void rows_times_panels(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                       int64_t p1, float* y, int64_t ldy, const Int8TileSink* sink, Int8SinkAt at) {
  if (!sink) return int8_gemm_block(w, x, m0, m1, p0, p1, y + m0 * ldy + p0 * 16, ldy);
  constexpr int64_t kChunk = 4;
  alignas(64) float tile[128 * kChunk * 16];
  for (int64_t p = p0; p < p1; p += kChunk) {
    const int64_t pe = std::min(p + kChunk, p1);
    float* t = at == Int8SinkAt::kResult ? y + m0 * ldy + p * 16 : tile;
    const int64_t ld = at == Int8SinkAt::kResult ? ldy : (pe - p) * 16;
    int8_gemm_block(w, x, m0, m1, p, pe, t, ld);
    (*sink)(t, ld, m0, p * 16, m1 - m0, std::min(w.n, pe * 16) - p * 16);
  }
}

// The shared split: `round(m0, m1)` (may be empty) prepares a block's rows before its product.
template <typename Round>
void split_rows(const PackedInt8W& w, const Int8Rows& x, int64_t M, float* y, int64_t ldy,
                const Int8TileSink* sink, Int8SinkAt at, const Round& round) {
  if (M <= 0 || w.panels == 0) return;
  const RowSplit s = row_split(M, w);
  if (s.split_panels) {
    // Few rows: rounding them all first (under 32 rows, a few us) costs less than a nested
    // parallel region per block; then tasks of a block x two pairs of panels (64 columns).
    round(0, M);
    const int64_t pairs = (w.panels + 1) / 2;
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, s.blocks, 1, 0, pairs, 2),
                      [&](const tbb::blocked_range2d<int64_t>& r) {
                        for (int64_t b = r.rows().begin(); b < r.rows().end(); ++b)
                          rows_times_panels(
                              w, x, b * s.rows, std::min(M, (b + 1) * s.rows), 2 * r.cols().begin(),
                              std::min(w.panels, 2 * r.cols().end()), y, ldy, sink, at);
                      });
    return;
  }
  // One task per block (simple_partitioner): the blocks are already the grain wanted.
  tbb::parallel_for(
      tbb::blocked_range<int64_t>(0, s.blocks, 1),
      [&](const tbb::blocked_range<int64_t>& r) {
        for (int64_t b = r.begin(); b < r.end(); ++b) {
          const int64_t m0 = b * s.rows, m1 = std::min(M, m0 + s.rows);
          round(m0, m1);
          rows_times_panels(w, x, m0, m1, 0, w.panels, y, ldy, sink, at);
        }
      },
      tbb::simple_partitioner());
}

}  // namespace

void int8_gemm(const PackedInt8W& w, const Int8Rows& x, int64_t M, float* y, int64_t ldy) {
  split_rows(w, x, M, y, ldy, nullptr, Int8SinkAt::kScratch, [](int64_t, int64_t) {});
}

void int8_matmul_f32(const PackedInt8W& w, const float* x, int64_t ldx, int64_t M,
                     const float* fixed_scale, const uint8_t* fixed_zero, U8RowBuffer& buf,
                     float* y, int64_t ldy, const Int8TileSink* sink, Int8SinkAt at,
                     const RowPrologue* pro) {
  buf.ld = w.kp;
  buf.uniform = fixed_scale != nullptr;
  buf.uniform_scale = fixed_scale ? *fixed_scale : 0.0f;
  buf.uniform_zero = fixed_zero ? *fixed_zero : 0;
  buf.q.resize(static_cast<size_t>(std::max<int64_t>(M, 0) * w.kp));
  buf.scale.resize(static_cast<size_t>(std::max<int64_t>(M, 0)));
  buf.zero.resize(static_cast<size_t>(std::max<int64_t>(M, 0)));
  split_rows(w, buf.rows(), M, y, ldy, sink, at, [&](int64_t m0, int64_t m1) {
    quantize_rows_u8(x, ldx, m0, m1, w.k, fixed_scale, fixed_zero, buf, pro);
  });
}

}  // namespace rlx::cpu
