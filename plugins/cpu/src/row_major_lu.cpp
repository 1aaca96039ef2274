#include "row_major_lu.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

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
  std::vector<T> panel;  // the leaf's columns, column-major

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

  // Columns [c0, c0 + w) by rank-1 updates, in a column-major copy of the panel: the pivot
  // search, the scaling and each update run down contiguous columns (in place they would stride
  // a whole row apart). The rows' swaps reach the columns outside the panel afterwards, in order.
  void leaf(int64_t c0, int64_t w) {
    const int64_t rows = m - c0;
    panel.resize(static_cast<size_t>(rows * w));
    T* s = panel.data();
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < w; ++c) s[c * rows + i] = *at(c0 + i, c0 + c);
    for (int64_t jj = 0; jj < w; ++jj) {
      T* col = s + jj * rows;
      // The pivot: the first largest magnitude at or below the diagonal (idamax's rule).
      int64_t p = jj;
      T best = std::abs(col[jj]);
      for (int64_t i = jj + 1; i < rows; ++i)
        if (std::abs(col[i]) > best) {
          best = std::abs(col[i]);
          p = i;
        }
      pivots[c0 + jj] = static_cast<int32_t>(c0 + p);
      if (p != jj)
        for (int64_t c = 0; c < w; ++c) std::swap(s[c * rows + jj], s[c * rows + p]);
      const T d = col[jj];
      if (d == T(0)) {
        if (info == 0) info = c0 + jj + 1;
        continue;
      }
      const T inv = T(1) / d;
      for (int64_t i = jj + 1; i < rows; ++i) col[i] *= inv;
      for (int64_t c = jj + 1; c < w; ++c) {
        T* other = s + c * rows;
        const T u = other[jj];
        for (int64_t i = jj + 1; i < rows; ++i) other[i] -= col[i] * u;
      }
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t c = 0; c < w; ++c) *at(c0 + i, c0 + c) = s[c * rows + i];
    for (int64_t jj = 0; jj < w; ++jj) {
      const int64_t j = c0 + jj, p = pivots[j];
      if (p == j) continue;
      std::swap_ranges(at(j, 0), at(j, c0), at(p, 0));
      std::swap_ranges(at(j, c0 + w), at(j + 1, 0), at(p, c0 + w));
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
