// Matrix multiply on contiguous operands: C[M,N] = A[M,K] * B[K,N] for `batch` independent
// problems laid out back to back. Rows of C are split over threads; the inner loop runs over N
// so the compiler vectorises it. Speed is the cpu-performance issue's job; this is the
// correct, reasonably cache-friendly baseline.
#pragma once
#include <cstdint>

namespace rlx::cpu {

template <typename T>
void gemm(int64_t batch, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C);

}  // namespace rlx::cpu
