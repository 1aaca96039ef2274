#include "gemm.h"

#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>

namespace rlx::cpu {

namespace {
constexpr int64_t kBlockN = 512;
constexpr int64_t kBlockK = 256;
}  // namespace

template <typename T>
void gemm(int64_t batch, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C) {
  if (M == 0 || N == 0) return;
  int64_t rows = batch * M;
  // Aim for tasks of about 64K multiply-adds so small problems stay on one thread.
  int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, N * K));
  tbb::parallel_for(
      tbb::blocked_range2d<int64_t>(0, rows, grain, 0, N, kBlockN),
      [&](const tbb::blocked_range2d<int64_t>& r) {
        for (int64_t row = r.rows().begin(); row < r.rows().end(); ++row) {
          int64_t b = row / M, m = row % M;
          const T* a = A + (b * M + m) * K;
          const T* bb = B + b * K * N;
          T* c = C + (b * M + m) * N;
          int64_t n0 = r.cols().begin(), n1 = r.cols().end();
          std::fill(c + n0, c + n1, T(0));
          for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
            int64_t k1 = std::min(K, k0 + kBlockK);
            for (int64_t k = k0; k < k1; ++k) {
              T av = a[k];
              const T* brow = bb + k * N;
              for (int64_t n = n0; n < n1; ++n) c[n] += av * brow[n];
            }
          }
        }
      });
}

template void gemm<float>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*);
template void gemm<double>(int64_t, int64_t, int64_t, int64_t, const double*, const double*, double*);
template void gemm<int64_t>(int64_t, int64_t, int64_t, int64_t, const int64_t*, const int64_t*, int64_t*);

}  // namespace rlx::cpu
