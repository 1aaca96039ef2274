// The bf16 GEMM's block on AMX tiles (gemm_bf16_blocks.h): four f32 accumulator tiles (0-3), two
// tiles of A (4, 5: 16 rows x 32 k each, read straight from the caller's rows) and two of packed
// B (6, 7), as amx_tiles.h lays them out.
#include <immintrin.h>

#include "amx_tiles.h"
#include "gemm_bf16_blocks.h"

namespace rlx::cpu {

namespace {

// The rows the tiles of this thread are configured for; -1 when they are not configured.
thread_local int configured_rows0 = -1, configured_rows1 = -1;

// MT = 1 for up to 16 rows, 2 for 17 to 32; NT panels.
template <int MT, int NT>
void block(const uint16_t* a, int64_t lda, const PackedBf16B& b, int64_t p, float* t) {
  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (MT > 1) {
    _tile_zero(2);
    if constexpr (NT > 1) _tile_zero(3);
  }
  const uint16_t* b0 = b.panel(p);
  const uint16_t* b1 = NT > 1 ? b.panel(p + 1) : b0;
  const int64_t stride = lda * 2;
  for (int64_t k = 0; k < b.k; k += 32) {
    _tile_loadd(4, a + k, stride);
    _tile_loadd(6, b0 + k * 16, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT > 1) {
      _tile_loadd(7, b1 + k * 16, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (MT > 1) {
      _tile_loadd(5, a + 16 * lda + k, stride);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (NT > 1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, t, 128);
  if constexpr (NT > 1) _tile_stored(1, t + 16, 128);
  if constexpr (MT > 1) {
    _tile_stored(2, t + 16 * 32, 128);
    if constexpr (NT > 1) _tile_stored(3, t + 16 * 32 + 16, 128);
  }
}

}  // namespace

void amx_bf16_block(const uint16_t* a, int64_t lda, int rows, const PackedBf16B& b, int64_t p,
                    bool two, float* t) {
  // Configured again only when the rows change (the last block of rows).
  const int r0 = rows < 16 ? rows : 16, r1 = rows > 17 ? rows - 16 : 1;
  if (r0 != configured_rows0 || r1 != configured_rows1)
    amx::configure(configured_rows0 = r0, configured_rows1 = r1);
  if (rows > 16) {
    if (two)
      block<2, 2>(a, lda, b, p, t);
    else
      block<2, 1>(a, lda, b, p, t);
  } else if (two) {
    block<1, 2>(a, lda, b, p, t);
  } else {
    block<1, 1>(a, lda, b, p, t);
  }
}

void amx_bf16_done() {
  _tile_release();
  configured_rows0 = configured_rows1 = -1;
}

}  // namespace rlx::cpu
