// What the AMX kernels (int8_gemm_amx.cpp, gemm_bf16_amx.cpp, nn_attention_bf16.cpp) share: asking
// Linux for the tile state, and the one tile layout they use. A register block is up to 32 rows x
// 32 columns: accumulator tiles 0-3, tiles 4 and 5 of A (16 rows each), tiles 6 and 7 of B; every
// tile row is 64 bytes.
#pragma once
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <initializer_list>

namespace rlx::cpu::amx {

// Linux hands the 8 KB tile state only to a process that asks (arch_prctl ARCH_REQ_XCOMP_PERM
// for XTILEDATA, feature 18); a kernel or hypervisor that does not enable it refuses, and the
// tile instructions would fault. Asking again is harmless.
inline bool request_tile_state() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

// The 64 bytes LDTILECFG reads (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles of the block's first 16 rows (0, 1, 4) hold rows0 rows, of the second (2, 3, 5) rows1;
// B's tiles (6, 7) always 16.
inline void configure(int rows0, int rows1) {
  TileConfig c;
  for (int t : {0, 1, 4}) c.rows[t] = static_cast<uint8_t>(rows0);
  for (int t : {2, 3, 5}) c.rows[t] = static_cast<uint8_t>(rows1);
  for (int t : {6, 7}) c.rows[t] = 16;
  for (int t = 0; t < 8; ++t) c.colsb[t] = 64;
  // Not GCC 12's _tile_loadconfig: its asm names only the first 8 bytes as read, so the stores
  // of the rows and widths were dropped as dead and the tiles stayed unconfigured (SIGILL).
  asm volatile("ldtilecfg %0" : : "m"(c));
}

}  // namespace rlx::cpu::amx
