// What the bf16 GEMM's driver (gemm_bf16.cpp) asks of a unit: one register block of up to 32 rows
// x 32 columns at a time. Each unit is a file of its own because each needs its own compiler
// flags (gemm_bf16_amx.cpp, gemm_bf16_dot.cpp); the driver reaches them only on a CPU that has
// the unit.
#pragma once
#include <cstdint>

#include "gemm_bf16.h"

namespace rlx::cpu {

// Rows [0, rows) (1 <= rows <= 32) of A (row stride lda elements; K = b.k, a multiple of 32)
// times panel p of b and, when `two`, panel p + 1, into t (f32 sums, row stride 32; only the rows
// and panels asked for are written).
using Bf16Block = void (*)(const uint16_t* a, int64_t lda, int rows, const PackedBf16B& b,
                           int64_t p, bool two, float* t);

void amx_bf16_block(const uint16_t* a, int64_t lda, int rows, const PackedBf16B& b, int64_t p,
                    bool two, float* t);
// Ends a task's use of the tiles: the state is released and the next block configures again.
void amx_bf16_done();

void avx512_bf16_block(const uint16_t* a, int64_t lda, int rows, const PackedBf16B& b, int64_t p,
                       bool two, float* t);

}  // namespace rlx::cpu
