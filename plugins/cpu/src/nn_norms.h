// Row-wise kernels of the native cpu lowerings, f32, each one pass over a row held in L1:
// LayerNorm and RMSNorm over the last axis, Softmax over any axis. They compute what the MIR
// decompositions in core/src/ops/ops_hir_nn.cpp compute (same operation order, f32 throughout),
// parallel over rows with oneTBB.
#pragma once
#include <cstdint>

#include "nn_simd.h"

namespace rlx::cpu {

// x [rows, n] -> y; g and b ([n]) may be null.
void layer_norm_f32(const float* x, int64_t rows, int64_t n, float eps, const float* g,
                    const float* b, float* y, const NnSimd& simd);
void rms_norm_f32(const float* x, int64_t rows, int64_t n, float eps, const float* g, float* y,
                  const NnSimd& simd);
// x viewed as [outer, n, inner], softmax over the middle axis.
void softmax_f32(const float* x, int64_t outer, int64_t n, int64_t inner, float* y,
                 const NnSimd& simd);

}  // namespace rlx::cpu
