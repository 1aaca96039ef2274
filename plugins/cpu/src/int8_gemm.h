// The int8 GEMM behind QMatMul (core/src/ops/ops_quant.cpp): u8 activations times s8 weights
// summed exactly in i32, then dequantized to f32 in the epilogue of each register tile:
//   y[m, n] = s_m * ws_n * (sum_k xq[m, k] w[n, k] - z_m * colsum_n) + bias_n
// where xq = round(x / s_m) + z_m (rlx/core/quantize.h) and colsum_n = sum_k w[n, k]: the zero
// point of the asymmetric u8 activations is compensated once per output instead of per product,
// which is what lets the AVX-512 VNNI instruction vpdpbusd (u8 x s8, four products per i32
// lane) do the whole inner loop. Weights are in [-127, 127], so no sum ever saturates.
//
// Four implementations over one packed weight layout: AMX-INT8 tiles (TDPBUSD), AVX-512 VNNI
// (vpdpbusd), AVX2 (widened to i16, vpmaddwd) and portable C++. RLX_CPU_INT8_ISA=portable|avx2|
// avx512vnni|amx picks one; an ISA this CPU lacks is an error, never a silent fallback. All four
// sum the same integers exactly, so they give the same bytes.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aligned_vector.h"

namespace rlx::cpu {

enum class Int8Isa : uint8_t { kPortable, kAvx2, kAvx512Vnni, kAmx };
const char* int8_isa_name(Int8Isa isa);
bool int8_isa_supported(Int8Isa isa);
Int8Isa int8_isa();              // RLX_CPU_INT8_ISA when set, else the best the CPU has
void set_int8_isa(Int8Isa isa);  // tests force each path; throws when the CPU lacks it

// W i8 [N, K] in panels of 16 output columns. K is padded to kp (a multiple of 4, or of 64 on a
// CPU with AMX, whose tiles take 64 k at a time) with zero weights; a panel is kp / 4 groups of 64
// bytes, group g holding for each of its 16 columns the four weights k = 4g .. 4g + 3 (column-major
// lanes, vpdpbusd's operand). Columns past N are zero weights with scale 0.
struct PackedInt8W {
  int64_t n = 0, k = 0, kp = 0, panels = 0;
  AlignedVector<int8_t> data;   // panels * kp * 16 bytes, each 64-byte group on a cache line
  std::vector<int32_t> colsum;  // [panels * 16]
  std::vector<float> scale;     // [panels * 16]
  std::vector<float> bias;      // [panels * 16], zeros when the product has none
  const int8_t* panel(int64_t p) const { return data.data() + p * kp * 16; }
};
// bias may be null (no bias: zeros).
PackedInt8W pack_int8_weights(const int8_t* w, const float* scale, const float* bias, int64_t n,
                              int64_t k);

// Rows of quantized activations: row m is q + m * ld (ld >= kp, padding bytes zero) with its
// scale and zero point.
struct Int8Rows {
  const uint8_t* q = nullptr;
  int64_t ld = 0;
  const float* scale = nullptr;
  const int32_t* zero = nullptr;
  // Every row was rounded with the same given scale and zero point (calibrated parameters),
  // here too: epilogues fold them into per-column constants once per tile. (Not row 0's: rows
  // are rounded block by block in the tasks that multiply them, so row 0 may not be yet.)
  bool uniform = false;
  float uniform_scale = 0;
  int32_t uniform_zero = 0;
};

// Quantizes rows [m0, m1) of x [M, k] (row stride ldx) into rows: per row ranges (dynamic) when
// `fixed` is null, else the given parameters for every row. q (its padding bytes past k zeroed,
// so a reused buffer needs no clearing), scale, zero point into `dst`.
struct U8RowBuffer {
  // Rows of ld bytes (a multiple of 64 on AMX CPUs: whole lines), every byte written by
  // quantize_rows_u8, the padding too.
  UninitializedAlignedVector<uint8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> zero;
  Int8Rows rows() const {
    return {q.data(), ld, scale.data(), zero.data(), uniform, uniform_scale, uniform_zero};
  }
  int64_t ld = 0;
  bool uniform = false;  // rounded with given parameters, the same for every row: these
  float uniform_scale = 0;
  int32_t uniform_zero = 0;
};
// `pro`, when given, computes row m of the activations from row m of x first: a producer merged
// into the call (gemm_epilogue_fusion.h's QMatMul prologues). Either x[m, j] * col_scale[j]
// (SmoothQuant's Mul, vectorised here), or `other`, which reads row m of x (`in`) and writes
// the computed row to `out` (k floats).
struct RowPrologue {
  const float* col_scale = nullptr;
  std::function<void(int64_t m, const float* in, float* out)> other;
};
void quantize_rows_u8(const float* x, int64_t ldx, int64_t m0, int64_t m1, int64_t k,
                      const float* fixed_scale, const uint8_t* fixed_zero, U8RowBuffer& dst,
                      const RowPrologue* pro = nullptr);

// Rows [m0, m1) x panels [p0, p1) into the tile y: element (m, n) at y[(m - m0) * ldy + n -
// 16 p0], so a caller may point y at a scratch tile or at (m0, 16 p0) of the whole result.
// Columns >= N are not written.
void int8_gemm_block(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, float* y, int64_t ldy);

// Takes each finished tile of int8_matmul_f32: rows [m0, m0 + rows) x columns [n0, n0 + cols)
// of the result, at t with row stride ld. Either a scratch tile, so an epilogue may read operands
// that share the result's storage before the tile is stored, or (Int8SinkAt::kResult) the tile's
// place in y itself, for an epilogue whose operands do not overlap y: no copy then.
using Int8TileSink =
    std::function<void(float* t, int64_t ld, int64_t m0, int64_t n0, int64_t rows, int64_t cols)>;
enum class Int8SinkAt : uint8_t { kScratch, kResult };

// QMatMul's whole product: x f32 [M, k] (row stride ldx) rounded to u8 into `buf` (sized here)
// as quantize_rows_u8 does, times w, into y [M, N] (row stride ldy) or, when `sink` is given,
// through it. One parallel region: each task rounds its own block of rows and multiplies it
// right away, so the rounding is split over the threads with the product and its bytes are
// still in L1/L2 when read. (A serial rounding before the product, or a second parallel region
// for it, let the idle worker fall asleep: waking it cost ~40 us, as long as the whole product
// of 128 x 384 x 384 on two threads.)
// x must not share y's storage, as rows are rounded while other blocks' results are written
// (the arena planner never lets a kernel's result overlap its operands).
void int8_matmul_f32(const PackedInt8W& w, const float* x, int64_t ldx, int64_t M,
                     const float* fixed_scale, const uint8_t* fixed_zero, U8RowBuffer& buf,
                     float* y, int64_t ldy, const Int8TileSink* sink = nullptr,
                     Int8SinkAt at = Int8SinkAt::kScratch, const RowPrologue* pro = nullptr);

// The product of rows already rounded, split over threads like int8_matmul_f32: y [M, N] (row
// stride ldy).
void int8_gemm(const PackedInt8W& w, const Int8Rows& x, int64_t M, float* y, int64_t ldy);

namespace detail {
void int8_block_portable(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1,
                         int64_t p0, int64_t p1, float* y, int64_t ldy);
void int8_block_avx2(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                     int64_t p1, float* y, int64_t ldy);
void int8_block_avx512vnni(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1,
                           int64_t p0, int64_t p1, float* y, int64_t ldy);
// Needs w.kp % 64 == 0 (the packing of an AMX CPU).
void int8_block_amx(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                    int64_t p1, float* y, int64_t ldy);
// The CPU has AMX-INT8 and the kernel gave this process the tile state (asked for once).
bool amx_usable();
// The activation rounding with AVX-512 (same bytes as quant::quantize_u8), and a row's range
// (0 included, as quant::u8_params widens it anyway).
void quantize_row_u8_avx512(const float* x, int64_t k, float scale, uint8_t zero, uint8_t* q);
void scale_row_avx512(const float* x, const float* s, int64_t k, float* out);  // out = x * s
void row_range_avx512(const float* x, int64_t k, float* lo, float* hi);
// The dequantizing epilogue of one row of 16 columns: acc as i32 sums of panel p, written to
// out[0, 16) (columns past N skipped).
inline void int8_store16(const PackedInt8W& w, const Int8Rows& x, int64_t m, int64_t p,
                         const int32_t* acc, float* out) {
  const float sm = x.uniform ? x.uniform_scale : x.scale[m];
  const int32_t zm = x.uniform ? x.uniform_zero : x.zero[m];
  for (int j = 0; j < 16; ++j) {
    const int64_t n = p * 16 + j;
    if (n >= w.n) break;
    out[j] = sm * w.scale[n] * static_cast<float>(acc[j] - zm * w.colsum[n]) + w.bias[n];
  }
}
}  // namespace detail

}  // namespace rlx::cpu
