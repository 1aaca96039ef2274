// What each ISA translation unit (gemm_avx512.cpp, gemm_avx2.cpp, gemm_portable.cpp) exports to
// gemm.cpp: its blocking parameters and entry points, all built from gemm_kernels.inc with that
// unit's compiler flags. Internal to the GEMM; callers use gemm.h.
#pragma once
#include <cstdint>

#include "gemm.h"

namespace rlx::cpu {

struct GemmBlocking {
  int mr, nr;       // micro-tile (registers)
  int64_t kc, mc;   // depth of a packed block (L1/L2), rows of packed A per block (L2)
  int64_t nc;       // columns of B packed per block when B is not prepacked (L3)
};

struct GemmBackend {
  GemmIsa isa;
  GemmBlocking f32, f64;
  // Packs columns [j0, j1) of B [K, N] (j0 a multiple of nr) where the prepacked layout of all
  // of B (size packed_b_elems()) keeps them, so that threads can pack column ranges side by side.
  void (*pack_b_f32)(const MatView& b, int64_t K, int64_t N, int64_t j0, int64_t j1, float* dst);
  void (*pack_b_f64)(const MatView& b, int64_t K, int64_t N, int64_t j0, int64_t j1, double* dst);
  // C block [m0, m1) x [n0, n1), n0 a multiple of NR unless n0 == 0; B from g.packed or g.b.
  void (*block_f32)(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
  void (*block_f64)(const GemmArgs& g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
  // The epilogue of c's tile written to out (which may be c).
  void (*epilogue)(const GemmEpilogue& ep, const float* c, int64_t ldc, int64_t i0, int64_t j0,
                   int64_t m, int64_t n, float* out, int64_t ldo);
};

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline int64_t packed_b_elems(const GemmBlocking& b, int64_t K, int64_t N) {
  return K * round_up(N, b.nr);
}

const GemmBackend& gemm_backend_portable();
const GemmBackend& gemm_backend_avx2();    // only call when the CPU has AVX2 and FMA
const GemmBackend& gemm_backend_avx512();  // only call when the CPU has AVX-512 F/BW/VL
const GemmBackend& gemm_backend(GemmIsa isa);

}  // namespace rlx::cpu
