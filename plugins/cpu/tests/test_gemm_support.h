// What the cpu GEMM's two test files share: random operands and float64 references.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rlx::cpu::gemm_test {

inline std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// C = A B in float64 from views with element (i, j) at p[i * rs + j * cs].
inline std::vector<double> reference(int64_t M, int64_t N, int64_t K, const std::vector<double>& a,
                                     int64_t ars, int64_t acs, const std::vector<double>& b,
                                     int64_t brs, int64_t bcs) {
  std::vector<double> c(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[i * ars + k * acs] * b[k * brs + j * bcs];
      c[i * N + j] = s;
    }
  return c;
}

inline double gelu_erf(double x) {
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
inline double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace rlx::cpu::gemm_test
