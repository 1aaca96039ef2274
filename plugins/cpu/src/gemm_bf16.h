// bf16 x bf16 products with f32 sums, on whichever of two units this CPU has:
//  * AMX tiles: TDPBF16PS multiplies 16 rows x 32 bf16 of A by 32 x 16 bf16 of B into 16 x 16 f32
//    sums, 16,384 products an instruction;
//  * AVX512-BF16 (Cooper Lake, Zen 4 and later): VDPBF16PS adds the two products of a bf16 pair
//    to each of 16 f32 sums, twice the products of an f32 FMA per instruction, from operands half
//    the size.
// It is the cpu GEMM's path for a product whose operands are both bf16 (a bf16 model, or a product
// amp-bf16 narrowed), chosen per node when the CPU has one of the units and the shapes suit it,
// and reported by `rlx explain`. Without either, bf16 operands are widened for the f32 GEMM.
//
// Numerics, the same on both units: each bf16 x bf16 product is exact in f32, as on the widening
// path; the sums are f32 in a different order, and both units treat subnormal inputs and results
// as zero and round to nearest even whatever MXCSR says (Intel's descriptions of TDPBF16PS and
// VDPBF16PS). The widening path keeps subnormals: the difference is below the f32 rounding of the
// sums in any model whose values are not ~1e-38, but it is a difference, which is why the choice
// is reported.
#pragma once
#include <cstdint>
#include <vector>

#include "aligned_vector.h"
#include "gemm.h"

namespace rlx::cpu {

enum class Bf16Unit { kNone, kAmx, kAvx512Bf16 };

// AMX-BF16 present, the tile state granted to this process, and RLX_CPU_AMX_BF16 not 0.
bool amx_bf16_enabled();
// AVX512-BF16 present and RLX_CPU_AVX512_BF16 not 0.
bool avx512_bf16_enabled();
// The unit bf16 products run on here: AMX where enabled, else AVX512-BF16, else none.
Bf16Unit bf16_unit();
// "AMX tiles (tdpbf16ps)", "AVX512-BF16 (vdpbf16ps)" or "none", for reports.
const char* bf16_unit_name(Bf16Unit unit);

// B [K, N] (a bf16 view) in panels of 16 columns, each kp / 2 rows of 64 bytes where row g holds
// the pair k = 2g, 2g + 1 of every column: the layout TDPBF16PS reads as a tile and VDPBF16PS as
// one register a row. K is padded to kp (a multiple of 32) and N to whole panels with zeros.
struct PackedBf16B {
  int64_t k = 0, n = 0, kp = 0, panels = 0;
  AlignedVector<uint16_t> data;
  const uint16_t* panel(int64_t p) const { return data.data() + p * kp * 16; }
};
PackedBf16B pack_bf16_b(const MatView& b, int64_t K, int64_t N);

// Whether the bf16 GEMM takes A: bf16 with contiguous rows of a K that whole tiles cover (a
// tile cannot mask the tail of a row, and reading past it could meet a NaN; both units keep the
// one rule so the choice does not depend on the CPU).
bool bf16_gemm_takes(const MatView& a, int64_t K);

// C [M, N] = epilogue(A [M, K] x B) on `unit` (not kNone), split over the oneTBB arena; C is
// written as `c_dtype` (f32 or bf16, rounded to nearest even) at row stride ldc. The epilogue's
// loads are indexed by the global (row, column), as gemm()'s. `bias16` (bf16 results only, no
// epilogue) is a bf16 Linear's bias row: each result is rounded to bf16, the bias added in f32
// and the sum rounded again, the two roundings of the Linear's decomposition (a bf16 product,
// then a bf16 add).
void bf16_gemm(Bf16Unit unit, const MatView& a, int64_t M, const PackedBf16B& b,
               const GemmEpilogue* ep, DType c_dtype, void* c, int64_t ldc,
               const uint16_t* bias16 = nullptr);

}  // namespace rlx::cpu
