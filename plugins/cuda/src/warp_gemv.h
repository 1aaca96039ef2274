// Products with a few rows (m <= 8: the Linear layers of a decode step) as the cuda target's own
// kernel: a warp per output column, each lane reading 16 bytes of the weight row at a time.
// Nothing is reused at m == 1, so such a product is a read of B at the memory's rate; cuBLASLt's
// GEMVs took 6 to 11 us a call on an H200 for weights of 1 to 6 MB (bench/RESULTS.md), 3 to 5
// times that read. Fused epilogues (bias, activation, residual) are applied before the store, as
// the SDK's matrix kernels apply them.
#pragma once
#include <optional>

#include "rlx/sdk/render.h"

namespace rlx::cuda {

// Whether warp_gemv computes `shape`: 1 <= m <= 8, A and B contiguous along k, f16/bf16/f32
// operands, k a whole number of 16-byte weight vectors and every row of A and B starting on a
// vector. RLX_CUDA_GEMV=0 turns it off (cuBLASLt or the SDK's kernel then compute the product).
bool warp_gemv_takes(const sdk::MatmulShape& shape);

// The kernel for `shape` (nullopt where warp_gemv_takes declines): blocks of 256 threads, groups
// counting 64 work-items as render_matmul's do.
std::optional<sdk::MatmulKernel> warp_gemv(const sdk::MatmulShape& shape);

}  // namespace rlx::cuda
