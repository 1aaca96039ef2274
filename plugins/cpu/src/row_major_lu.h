// LU with partial pivoting of a row-major matrix, in place, as LAPACK's getrf computes it
// (P a = L U, L unit lower, U upper, pivots as getrf's ipiv but from 0) without the two
// transposes a column-major getrf needs on a row-major buffer (a quarter of LU's time at
// 512-1024). Recursive over columns as LAPACK's getrf2 (row_major_lu.cpp): nearly all the work
// is row-major trsm and gemm through OpenBLAS's CBLAS, and row swaps are contiguous. Returns getrf's info: 0, or j + 1 for the first exactly zero pivot (the
// factorization is still complete, as getrf's).
#pragma once
#include <cstdint>

namespace rlx::cpu {

int64_t lu_row_major(float* a, int64_t m, int64_t n, int32_t* pivots);
int64_t lu_row_major(double* a, int64_t m, int64_t n, int32_t* pivots);

}  // namespace rlx::cpu
