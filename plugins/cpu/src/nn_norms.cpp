#include "nn_norms.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace rlx::cpu {

namespace {

// Rows per task: about 32K elements, so small tensors stay on the calling thread.
template <typename F>
void for_rows(int64_t rows, int64_t n, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, n));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t i = r.begin(); i < r.end(); ++i) f(i);
                    });
}

// One softmax over n contiguous values; NaN anywhere makes the whole row NaN (the
// decomposition's max propagates it), all -inf gives 0/0 = NaN as well.
void softmax_row(const float* x, int64_t n, float* y, const NnSimd& simd) {
  bool saw_nan = false;
  const float m = simd.row_max(x, n, &saw_nan);
  if (saw_nan) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  const float total = simd.exp_shifted(x, n, m, y);
  if (m == -std::numeric_limits<float>::infinity()) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  simd.divide(y, n, total, y);
}

}  // namespace

void layer_norm_f32(const float* x, int64_t rows, int64_t n, float eps, const float* g,
                    const float* b, float* y, const NnSimd& simd) {
  const float fn = static_cast<float>(n);
  for_rows(rows, n, [&](int64_t r) {
    const float* row = x + r * n;
    const float mean = simd.sum(row, n) / fn;
    const float var = simd.sum_sq_centered(row, n, mean) / fn;
    simd.normalize(row, n, mean, 1.0f / std::sqrt(var + eps), g, b, y + r * n);
  });
}

void rms_norm_f32(const float* x, int64_t rows, int64_t n, float eps, const float* g, float* y,
                  const NnSimd& simd) {
  const float fn = static_cast<float>(n);
  for_rows(rows, n, [&](int64_t r) {
    const float* row = x + r * n;
    const float ms = simd.sum_sq_centered(row, n, 0.0f) / fn;
    simd.normalize(row, n, 0.0f, 1.0f / std::sqrt(ms + eps), g, nullptr, y + r * n);
  });
}

void softmax_f32(const float* x, int64_t outer, int64_t n, int64_t inner, float* y,
                 const NnSimd& simd) {
  if (inner == 1) {
    for_rows(outer, n, [&](int64_t r) { softmax_row(x + r * n, n, y + r * n, simd); });
    return;
  }
  // A strided axis: gather each column into a contiguous row, then scatter it back.
  for_rows(outer * inner, n, [&](int64_t c) {
    thread_local std::vector<float> in, res;
    in.resize(n);
    res.resize(n);
    const int64_t base = (c / inner) * n * inner + c % inner;
    for (int64_t i = 0; i < n; ++i) in[i] = x[base + i * inner];
    softmax_row(in.data(), n, res.data(), simd);
    for (int64_t i = 0; i < n; ++i) y[base + i * inner] = res[i];
  });
}

}  // namespace rlx::cpu
