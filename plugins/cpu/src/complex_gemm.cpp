#include "complex_gemm.h"

#include <cblas.h>

#include <complex>

namespace rlx::cpu {

namespace {

using C64 = std::complex<float>;

// Gathers a strided view (element strides, 0 broadcasts) into contiguous row-major order.
void gather_view(const C64* src, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, C64* dst) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace

void complex_batched_matmul(const void* a, const std::vector<int64_t>& a_shape,
                            const std::vector<int64_t>& a_strides, const void* b,
                            const std::vector<int64_t>& b_shape,
                            const std::vector<int64_t>& b_strides, int64_t batch, int64_t M,
                            int64_t N, int64_t K, void* out) {
  std::vector<C64> A(batch * M * K), B(batch * K * N);
  gather_view(static_cast<const C64*>(a), a_shape, a_strides, A.data());
  gather_view(static_cast<const C64*>(b), b_shape, b_strides, B.data());
  C64* C = static_cast<C64*>(out);
  const C64 one(1.0f, 0.0f), zero(0.0f, 0.0f);
  for (int64_t i = 0; i < batch; ++i) {
    if (K == 0) {
      std::fill(C + i * M * N, C + (i + 1) * M * N, zero);
      continue;
    }
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                static_cast<int>(K), &one, A.data() + i * M * K, static_cast<int>(K),
                B.data() + i * K * N, static_cast<int>(N), &zero, C + i * M * N,
                static_cast<int>(N));
  }
}

}  // namespace rlx::cpu
