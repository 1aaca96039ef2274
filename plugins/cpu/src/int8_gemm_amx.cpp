// The AMX-INT8 int8 kernel (int8_gemm.h): TDPBUSD multiplies a tile of 16 rows x 64 u8
// activations by a tile of 64 x 16 s8 weights into 16 x 16 i32 sums, 16,384 products in one
// instruction (VNNI's vpdpbusd does 64). Its weight operand is "VNNI-packed", row g holding four
// consecutive k for each of 16 columns: the bytes of 16 groups of a PackedInt8W panel exactly,
// so AMX reads the packing the VNNI kernel uses, given K padded to a multiple of 64
// (pack_int8_weights pads it on CPUs with AMX).
//
// A register block is up to 32 rows x 32 columns: four accumulator tiles (0-3), two activation
// tiles (4, 5) and two weight tiles (6, 7), the eight tiles AMX has. Each tile's sums are stored
// to the stack and dequantized with the same AVX-512 epilogue as the VNNI kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "amx_tiles.h"
#include "int8_gemm.h"
#include "int8_gemm_simd.h"

namespace rlx::cpu::detail {

namespace {

// A tile's sums (rows x 16 i32, stored by _tile_stored, whose tile number must be a literal)
// through the epilogue into out (row stride ldy).
void dequantize(const int32_t* acc, const PackedInt8W& w, const Int8Rows& x, int64_t m, int rows,
                int64_t p, float* out, int64_t ldy) {
  const Int8Cols cols = int8_cols(w, p, x);
  for (int r = 0; r < rows; ++r)
    int8_store16_avx512(cols, x, m + r, _mm512_load_si512(acc + r * 16), out + r * ldy);
}

// Rows [m, m + rows) (MT = 1: up to 16, MT = 2: 17 to 32) x panels [p, p + NT) into yt.
template <int MT, int NT>
void block(const PackedInt8W& w, const Int8Rows& x, int64_t m, int rows, int64_t p, float* yt,
           int64_t ldy) {
  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (MT > 1) {
    _tile_zero(2);
    if constexpr (NT > 1) _tile_zero(3);
  }
  const uint8_t* a = x.q + m * x.ld;
  const int8_t* b0 = w.panel(p);
  const int8_t* b1 = NT > 1 ? w.panel(p + 1) : b0;
  for (int64_t k = 0; k < w.kp; k += 64) {
    _tile_loadd(4, a + k, x.ld);
    _tile_loadd(6, b0 + k * 16, 64);
    _tile_dpbusd(0, 4, 6);
    if constexpr (NT > 1) {
      _tile_loadd(7, b1 + k * 16, 64);
      _tile_dpbusd(1, 4, 7);
    }
    if constexpr (MT > 1) {
      _tile_loadd(5, a + 16 * x.ld + k, x.ld);
      _tile_dpbusd(2, 5, 6);
      if constexpr (NT > 1) _tile_dpbusd(3, 5, 7);
    }
  }
  alignas(64) int32_t acc[4][16 * 16];
  const int top = std::min(rows, 16);
  _tile_stored(0, acc[0], 64);
  dequantize(acc[0], w, x, m, top, p, yt, ldy);
  if constexpr (NT > 1) {
    _tile_stored(1, acc[1], 64);
    dequantize(acc[1], w, x, m, top, p + 1, yt + 16, ldy);
  }
  if constexpr (MT > 1) {
    _tile_stored(2, acc[2], 64);
    dequantize(acc[2], w, x, m + 16, rows - 16, p, yt + 16 * ldy, ldy);
    if constexpr (NT > 1) {
      _tile_stored(3, acc[3], 64);
      dequantize(acc[3], w, x, m + 16, rows - 16, p + 1, yt + 16 * ldy + 16, ldy);
    }
  }
}

}  // namespace

bool amx_usable() {
  static const bool ok = __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
                         __builtin_cpu_supports("avx512vnni") && amx::request_tile_state();
  return ok;
}

void int8_block_amx(const PackedInt8W& w, const Int8Rows& x, int64_t m0, int64_t m1, int64_t p0,
                    int64_t p1, float* y, int64_t ldy) {
  // Tile configuration is per thread and is dropped by _tile_release, so each call sets its own
  // and releases it (an unreleased tile state makes every context switch save 8 KB more).
  // Panels outer, rows inner: a pair of weight panels (12 KB at K = 384) is read from L2 once
  // and then from L1 for every 32 rows of the block, where rows outer streamed all the weights
  // from L2 for each 32 rows (the two measured the same on MiniLM's shapes; this one reads L2
  // less).
  int rows0 = 16, rows1 = 16;
  amx::configure(rows0, rows1);
  for (int64_t p = p0; p < p1; p += 2) {
    const bool pair = p + 1 < p1;
    for (int64_t m = m0; m < m1; m += 32) {
      const int rows = static_cast<int>(std::min<int64_t>(32, m1 - m));
      const int r0 = std::min(rows, 16), r1 = std::max(rows - 16, 1);
      if (r0 != rows0 || r1 != rows1) amx::configure(rows0 = r0, rows1 = r1);
      float* yt = y + (m - m0) * ldy + (p - p0) * 16;
      if (rows > 16) {
        if (pair)
          block<2, 2>(w, x, m, rows, p, yt, ldy);
        else
          block<2, 1>(w, x, m, rows, p, yt, ldy);
      } else if (pair) {
        block<1, 2>(w, x, m, rows, p, yt, ldy);
      } else {
        block<1, 1>(w, x, m, rows, p, yt, ldy);
      }
    }
  }
  _tile_release();
}

}  // namespace rlx::cpu::detail
