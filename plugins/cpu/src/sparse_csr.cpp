// CSR kernels on the cpu: SpMV and SpMM over rows with oneTBB, SparseSolve through SuiteSparse
// KLU. Every call checks the structure it is about to index (core/src/ops/ops_sparse.cpp gives
// the rules) so a malformed matrix is a user error naming the first bad position, never an
// out-of-bounds read.
#include <fmt/format.h>
#include <suitesparse/klu.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "linalg_kernels.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// The structure as i64 views over the caller's i32 or i64 buffers.
struct Csr {
  int64_t rows = 0, cols = 0, nnz = 0;
  const void* indptr = nullptr;
  const void* indices = nullptr;
  bool wide = false;  // i64 indices
  int64_t ptr(int64_t i) const {
    return wide ? static_cast<const int64_t*>(indptr)[i] : static_cast<const int32_t*>(indptr)[i];
  }
  int64_t col(int64_t j) const {
    return wide ? static_cast<const int64_t*>(indices)[j] : static_cast<const int32_t*>(indices)[j];
  }
};

Csr csr_view(const std::vector<lir::Buffer>& in, const std::vector<void*>& ptrs,
             const lir::CallKernel& k, int64_t cols) {
  Csr a;
  a.rows = in[0].shape[0] - 1, a.cols = cols, a.nnz = in[1].shape[0];
  a.indptr = ptrs[k.inputs[0]], a.indices = ptrs[k.inputs[1]];
  a.wide = in[0].dtype == DType::kI64;
  return a;
}

// Throws the error for the first malformed position of `a`; returns when there is none.
void check_csr(const Csr& a, const std::string& where) {
  const int64_t cols = a.cols;
  const char* fix =
      "; a CSR matrix needs indptr[0] = 0, non-decreasing indptr ending at nnz, and "
      "column indices in [0, n) strictly increasing within each row";
  if (a.ptr(0) != 0)
    throw_user_error(fmt::format("{}: indptr[0] is {}, not 0{}", where, a.ptr(0), fix));
  if (a.ptr(a.rows) != a.nnz)
    throw_user_error(fmt::format("{}: indptr[{}] is {} but there are {} values (nnz){}", where,
                                 a.rows, a.ptr(a.rows), a.nnz, fix));
  for (int64_t i = 0; i < a.rows; ++i) {
    const int64_t b = a.ptr(i), e = a.ptr(i + 1);
    if (e < b || e > a.nnz)
      throw_user_error(fmt::format("{}: indptr decreases or passes nnz at row {} ({} then {}){}",
                                   where, i, b, e, fix));
    for (int64_t j = b; j < e; ++j) {
      const int64_t c = a.col(j);
      if (c < 0 || c >= cols)
        throw_user_error(
            fmt::format("{}: row {} has column index {} (at position {}), outside "
                        "[0, {}){}",
                        where, i, c, j, cols, fix));
      if (j > b && c <= a.col(j - 1))
        throw_user_error(
            fmt::format("{}: row {} has column indices {} then {} (positions {}, "
                        "{}): unsorted or repeated{}",
                        where, i, a.col(j - 1), c, j - 1, j, fix));
    }
  }
}

// y = A x for x [n, k], checking each row's structure in the same parallel pass (so checking
// costs no extra sweep over the indices); a bad row leaves y unfinished and is reported by
// check_csr with the exact position.
template <typename T, typename I>
bool spmm_checked(const Csr& a, const T* v, const T* x, int64_t k, T* y) {
  const I* ptr = static_cast<const I*>(a.indptr);
  const I* col = static_cast<const I*>(a.indices);
  if (ptr[0] != 0 || ptr[a.rows] != a.nnz) return false;
  std::atomic<bool> ok{true};
  // Rows in blocks of about 64k nonzeros: smaller tasks cost more in scheduling (on a loaded
  // machine, waiting for a descheduled worker) than they save.
  const int64_t grain = std::max<int64_t>(256, a.rows * 65536 / std::max<int64_t>(1, a.nnz));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, a.rows, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t i = r.begin(); i < r.end(); ++i) {
                        const int64_t b = ptr[i], e = ptr[i + 1];
                        bool row_ok = b <= e && e <= a.nnz;
                        int64_t last = -1;
                        if (k == 1) {  // SpMV: the sum stays in a register
                          T sum = T(0);
                          for (int64_t j = b; row_ok && j < e; ++j) {
                            const int64_t cj = col[j];
                            row_ok = cj > last && cj < a.cols;
                            last = cj;
                            sum += v[j] * x[row_ok ? cj : 0];
                          }
                          y[i] = sum;
                        } else {
                          T* yi = y + i * k;
                          for (int64_t c = 0; c < k; ++c) yi[c] = T(0);
                          for (int64_t j = b; row_ok && j < e; ++j) {
                            const int64_t cj = col[j];
                            row_ok = cj > last && cj < a.cols;
                            last = cj;
                            if (!row_ok) break;
                            const T w = v[j];
                            const T* xr = x + cj * k;
                            for (int64_t c = 0; c < k; ++c) yi[c] += w * xr[c];
                          }
                        }
                        if (!row_ok) {
                          ok = false;
                          return;
                        }
                      }
                    });
  return ok;
}

template <typename T>
void spmm(const Csr& a, const T* v, const T* x, int64_t k, T* y, const std::string& where) {
  const bool ok =
      a.wide ? spmm_checked<T, int64_t>(a, v, x, k, y) : spmm_checked<T, int32_t>(a, v, x, k, y);
  if (ok) return;
  check_csr(a, where);
  throw_internal_error(where + ": SpMV found a malformed row the structure check did not");
}

// KLU factors the compressed-column matrix it is given; our CSR arrays read as CSC describe
// A^T, so klu_tsolve (which solves with the transpose of the factored matrix) solves A x = b.
void klu_solve(const Csr& a, const double* values, const double* b, int64_t nrhs, double* x,
               const std::string& where) {
  if (a.nnz > std::numeric_limits<int32_t>::max())
    throw_user_error(fmt::format("{}: {} nonzeros exceed KLU's 32-bit index range", where, a.nnz));
  std::vector<int32_t> ap(static_cast<size_t>(a.rows + 1)), ai(static_cast<size_t>(a.nnz));
  for (int64_t i = 0; i <= a.rows; ++i) ap[i] = static_cast<int32_t>(a.ptr(i));
  for (int64_t j = 0; j < a.nnz; ++j) ai[j] = static_cast<int32_t>(a.col(j));
  klu_common common;
  klu_defaults(&common);
  const auto n = static_cast<int32_t>(a.rows);
  auto free_symbolic = [&](klu_symbolic* s) { klu_free_symbolic(&s, &common); };
  auto free_numeric = [&](klu_numeric* s) { klu_free_numeric(&s, &common); };
  std::unique_ptr<klu_symbolic, decltype(free_symbolic)> sym(
      klu_analyze(n, ap.data(), ai.data(), &common), free_symbolic);
  if (!sym)
    throw_user_error(fmt::format("{}: KLU could not analyze the matrix (status {}{})", where,
                                 common.status,
                                 common.status == KLU_SINGULAR ? ": it is singular" : ""));
  std::unique_ptr<klu_numeric, decltype(free_numeric)> num(
      klu_factor(ap.data(), ai.data(), const_cast<double*>(values), sym.get(), &common),
      free_numeric);
  if (!num || common.status == KLU_SINGULAR)
    throw_user_error(fmt::format(
        "{}: the sparse matrix is singular (KLU status {}{}); the system has no unique solution. "
        "Check for an empty row or column, or a zero pivot",
        where, common.status,
        common.status == KLU_SINGULAR
            ? fmt::format(", first zero pivot in column {}", common.singular_col)
            : std::string()));
  // KLU takes right-hand sides column by column (n x nrhs column-major); ours are row-major.
  std::vector<double> cols(static_cast<size_t>(a.rows * nrhs));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t c = 0; c < nrhs; ++c) cols[c * a.rows + i] = b[i * nrhs + c];
  if (!klu_tsolve(sym.get(), num.get(), n, static_cast<int32_t>(nrhs), cols.data(), &common))
    throw_user_error(fmt::format("{}: KLU's solve failed (status {})", where, common.status));
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t c = 0; c < nrhs; ++c) x[i * nrhs + c] = cols[c * a.rows + i];
}

template <typename T>
void reject_non_finite(const T* v, int64_t n, const std::string& where, const char* what) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i]))
      throw_user_error(
          fmt::format("{}: {} holds a non-finite value ({}) at index {}", where, what, v[i], i));
}

}  // namespace

void run_sparse_csr(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                    const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs,
                    const std::string& where) {
  const std::string op = k.callee.substr(std::string("native:").size());
  const int64_t n = in[3].shape[0];
  const int64_t cols_of_x = in[3].shape.size() == 2 ? in[3].shape[1] : 1;
  const Csr a = csr_view(in, ptrs, k, n);
  if (op == "SparseSolve") {
    check_csr(a, where);
    const int64_t nb = a.rows * cols_of_x;
    if (in[2].dtype == DType::kF64) {
      const auto* v = static_cast<const double*>(ptrs[k.inputs[2]]);
      reject_non_finite(v, a.nnz, where, "values");
      return klu_solve(a, v, static_cast<const double*>(ptrs[k.inputs[3]]), cols_of_x,
                       static_cast<double*>(ptrs[k.outputs[0]]), where);
    }
    // f32: KLU factors in f64, so the values and b are widened (exactly) and x is rounded to
    // f32 once; the claim's note reports it.
    const auto* vf = static_cast<const float*>(ptrs[k.inputs[2]]);
    const auto* bf = static_cast<const float*>(ptrs[k.inputs[3]]);
    std::vector<double> v(vf, vf + a.nnz), b(bf, bf + nb), x(static_cast<size_t>(nb));
    reject_non_finite(v.data(), a.nnz, where, "values");
    klu_solve(a, v.data(), b.data(), cols_of_x, x.data(), where);
    auto* xf = static_cast<float*>(ptrs[k.outputs[0]]);
    for (int64_t i = 0; i < nb; ++i) xf[i] = static_cast<float>(x[i]);
    return;
  }
  if (in[2].dtype == DType::kF64)
    return spmm(a, static_cast<const double*>(ptrs[k.inputs[2]]),
                static_cast<const double*>(ptrs[k.inputs[3]]), cols_of_x,
                static_cast<double*>(ptrs[k.outputs[0]]), where);
  spmm(a, static_cast<const float*>(ptrs[k.inputs[2]]),
       static_cast<const float*>(ptrs[k.inputs[3]]), cols_of_x,
       static_cast<float*>(ptrs[k.outputs[0]]), where);
}

}  // namespace rlx::cpu
