#include "row_major_lu.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace rlx::cpu {

namespace {

// Columns factored by rank-1 updates at the bottom of the recursion (32 measured fastest of 8-64
// at 512-2048 here); above it every update is one trsm and one gemm.
constexpr int64_t kLeaf = 32;

void trsm(const float* l, float* b, int64_t rows, int64_t cols, int64_t ld) {
  cblas_strsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(rows),
              static_cast<int>(cols), 1.0f, l, static_cast<int>(ld), b, static_cast<int>(ld));
}
void trsm(const double* l, double* b, int64_t rows, int64_t cols, int64_t ld) {
  cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasUnit, static_cast<int>(rows),
              static_cast<int>(cols), 1.0, l, static_cast<int>(ld), b, static_cast<int>(ld));
}
// c -= a b
void gemm_sub(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k, int64_t ld) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), -1.0f, a, static_cast<int>(ld), b, static_cast<int>(ld), 1.0f, c,
              static_cast<int>(ld));
}
void gemm_sub(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k,
              int64_t ld) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), -1.0, a, static_cast<int>(ld), b, static_cast<int>(ld), 1.0, c,
              static_cast<int>(ld));
}

template <typename T>
struct Lu {
  T* a;
  int64_t m, n;
  int32_t* pivots;
  int64_t info = 0;

  T* at(int64_t i, int64_t j) const { return a + i * n + j; }

  // Columns [c0, c0 + w) at or below row c0, left by the columns before them (pivots and
  // updates done), as getrf2 does: the left half, its updates of the right half, the right half.
  // Row swaps cover the whole width, so no other column needs them later.
  void columns(int64_t c0, int64_t w) {
    if (w <= kLeaf) return leaf(c0, w);
    const int64_t w1 = w / 2, c1 = c0 + w1, w2 = w - w1;
    columns(c0, w1);
    trsm(at(c0, c0), at(c0, c1), w1, w2, n);
    if (c1 < m) gemm_sub(at(c1, c0), at(c0, c1), at(c1, c1), m - c1, w2, w1, n);
    columns(c1, w2);
  }

  void leaf(int64_t c0, int64_t w) {
    const int64_t end = c0 + w;
    for (int64_t j = c0; j < end; ++j) {
      // The pivot: the first largest magnitude in column j at or below the diagonal (idamax's
      // rule).
      int64_t p = j;
      T best = std::abs(*at(j, j));
      for (int64_t i = j + 1; i < m; ++i) {
        const T v = std::abs(*at(i, j));
        if (v > best) {
          best = v;
          p = i;
        }
      }
      pivots[j] = static_cast<int32_t>(p);
      if (p != j) std::swap_ranges(at(j, 0), at(j + 1, 0), at(p, 0));
      const T d = *at(j, j);
      if (d == T(0)) {
        if (info == 0) info = j + 1;
        continue;
      }
      const T inv = T(1) / d;
      const T* urow = at(j, 0);
      for (int64_t i = j + 1; i < m; ++i) {
        T* row = at(i, 0);
        const T l = row[j] * inv;
        row[j] = l;
        for (int64_t c = j + 1; c < end; ++c) row[c] -= l * urow[c];
      }
    }
  }
};

template <typename T>
int64_t factor(T* a, int64_t m, int64_t n, int32_t* pivots) {
  const int64_t k = std::min(m, n);
  Lu<T> lu{a, m, n, pivots};
  lu.columns(0, k);
  // A wide matrix's columns past k: U = L^-1 (P a) there (no rows below to update).
  if (n > k) trsm(a, a + k, k, n - k, n);
  return lu.info;
}

}  // namespace

int64_t lu_row_major(float* a, int64_t m, int64_t n, int32_t* pivots) {
  return factor(a, m, n, pivots);
}
int64_t lu_row_major(double* a, int64_t m, int64_t n, int32_t* pivots) {
  return factor(a, m, n, pivots);
}

}  // namespace rlx::cpu
