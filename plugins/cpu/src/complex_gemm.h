// c64 products (MatMul, dot_general) through OpenBLAS's cgemm: the operands arrive as strided
// views, arranged lhs [B, M, K] and rhs [B, K, N] by the caller (call_kernel.cpp).
#pragma once
#include <cstdint>
#include <vector>

namespace rlx::cpu {

void complex_batched_matmul(const void* a, const std::vector<int64_t>& a_shape,
                            const std::vector<int64_t>& a_strides, const void* b,
                            const std::vector<int64_t>& b_shape,
                            const std::vector<int64_t>& b_strides, int64_t batch, int64_t M,
                            int64_t N, int64_t K, void* out);

}  // namespace rlx::cpu
