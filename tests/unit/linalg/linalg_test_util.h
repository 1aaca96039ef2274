// Helpers for the linear-algebra suites: random matrices, products in double, and running one
// op's IR text on the cpu target.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/matrix_market.h"
#include "rlx/core/tensor.h"
#include "test_support.h"

namespace rlx::test {

using Mat = std::vector<double>;  // row-major

inline Mat random_matrix(int64_t m, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Mat a(static_cast<size_t>(m * n));
  for (auto& v : a) v = u(rng);
  return a;
}

// c = a b for a [m, k], b [k, n].
inline Mat mul(const Mat& a, const Mat& b, int64_t m, int64_t k, int64_t n) {
  Mat c(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

inline Mat transpose(const Mat& a, int64_t m, int64_t n) {
  Mat t(a.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) t[j * m + i] = a[i * n + j];
  return t;
}

// A random SPD matrix: b b^T + n I.
inline Mat random_spd(int64_t n, uint32_t seed) {
  Mat b = random_matrix(n, n, seed);
  Mat a = mul(b, transpose(b, n, n), n, n, n);
  for (int64_t i = 0; i < n; ++i) a[i * n + i] += static_cast<double>(n);
  return a;
}

inline double max_abs_diff(const Mat& a, const Mat& b) {
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]));
  return w;
}

// The 5-point Laplacian of a g x g grid (Dirichlet boundary): the 2D Poisson matrix.
inline CsrMatrix poisson_2d(int64_t g) {
  std::vector<int64_t> r, c;
  std::vector<double> v;
  auto at = [&](int64_t i, int64_t j, double x) { r.push_back(i), c.push_back(j), v.push_back(x); };
  for (int64_t y = 0; y < g; ++y)
    for (int64_t x = 0; x < g; ++x) {
      const int64_t i = y * g + x;
      at(i, i, 4);
      if (x > 0) at(i, i - 1, -1);
      if (x + 1 < g) at(i, i + 1, -1);
      if (y > 0) at(i, i - g, -1);
      if (y + 1 < g) at(i, i + g, -1);
    }
  return csr_from_triplets(g * g, g * g, r, c, v);
}

// ||A x - b|| / ||b|| in double.
inline double relative_residual(const CsrMatrix& a, const Mat& x, const Mat& b) {
  double r = 0, n = 0;
  for (int64_t i = 0; i < a.rows; ++i) {
    double ax = 0;
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) ax += a.values[k] * x[a.indices[k]];
    r += (ax - b[i]) * (ax - b[i]), n += b[i] * b[i];
  }
  return std::sqrt(r / n);
}

inline Tensor tensor(DType d, std::vector<int64_t> shape, const Mat& v) {
  if (d == DType::kF64) return Tensor::from<double>(d, std::move(shape), v);
  return Tensor::from<float>(d, std::move(shape), std::vector<float>(v.begin(), v.end()));
}

// The message of the rlx error `f` throws, "" when it succeeds.
template <typename F>
inline std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline std::string dims(const std::vector<int64_t>& s) {
  return fmt::format("{}", fmt::join(s, ","));
}

}  // namespace rlx::test
