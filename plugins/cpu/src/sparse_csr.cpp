// CSR kernels on the cpu: SpMV and SpMM over rows with oneTBB, SparseSolve through SuiteSparse
// (sparse_lu.cpp), CG as one fused loop (sparse_cg.cpp). Every call checks the structure it is
// about to index (the rules are in core/src/ops/ops_sparse.cpp) so a malformed matrix is a user
// error naming the first bad position, never an out-of-bounds read.
#include "sparse_csr.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "linalg_kernels.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

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

namespace {

Csr csr_view(const std::vector<lir::Buffer>& in, const std::vector<void*>& ptrs,
             const lir::CallKernel& k, int64_t cols) {
  Csr a;
  a.rows = in[0].shape[0] - 1, a.cols = cols, a.nnz = in[1].shape[0];
  a.indptr = ptrs[k.inputs[0]], a.indices = ptrs[k.inputs[1]];
  a.wide = in[0].dtype == DType::kI64;
  return a;
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
  if (op == "CG") {
    check_csr(a, where);
    CgOptions o;
    for (const auto& [key, value] : k.attrs) {
      if (key == "tol")
        o.tol = std::holds_alternative<double>(value)
                    ? std::get<double>(value)
                    : static_cast<double>(std::get<int64_t>(value));
      if (key == "max_iter") o.max_iter = std::get<int64_t>(value);
      if (key == "preconditioner") o.jacobi = std::get<std::string>(value) == "jacobi";
    }
    return run_cg(a, ptrs[k.inputs[2]], ptrs[k.inputs[3]], in[2].dtype == DType::kF64, o,
                  ptrs[k.outputs[0]], static_cast<int32_t*>(ptrs[k.outputs[1]]),
                  ptrs[k.outputs[2]]);
  }
  if (op == "SparseSolve") {
    check_csr(a, where);
    auto solver_attr = k.attrs.find("solver");
    const std::string solver = solver_attr == k.attrs.end()
                                   ? std::string("umfpack")
                                   : std::get<std::string>(solver_attr->second);
    const int64_t nb = a.rows * cols_of_x;
    if (in[2].dtype == DType::kF64) {
      const auto* v = static_cast<const double*>(ptrs[k.inputs[2]]);
      reject_non_finite(v, a.nnz, where, "values");
      return sparse_lu_solve(a, v, static_cast<const double*>(ptrs[k.inputs[3]]), cols_of_x,
                             static_cast<double*>(ptrs[k.outputs[0]]), solver, where);
    }
    // f32: the factorization runs in f64, so the values and b are widened (exactly) and x is
    // rounded to f32 once; the claim's note reports it.
    const auto* vf = static_cast<const float*>(ptrs[k.inputs[2]]);
    const auto* bf = static_cast<const float*>(ptrs[k.inputs[3]]);
    std::vector<double> v(vf, vf + a.nnz), b(bf, bf + nb), x(static_cast<size_t>(nb));
    reject_non_finite(v.data(), a.nnz, where, "values");
    sparse_lu_solve(a, v.data(), b.data(), cols_of_x, x.data(), solver, where);
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
