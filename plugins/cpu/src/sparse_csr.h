// The CSR structure as the cpu's sparse kernels read it (sparse_csr.cpp: products and the
// structure check; sparse_lu.cpp: the sparse LU solvers; sparse_cg.cpp: CG).
#pragma once
#include <cstdint>
#include <string>

namespace rlx::cpu {

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

// Throws the user error for the first malformed position of `a` (`where` names the node);
// returns when there is none.
void check_csr(const Csr& a, const std::string& where);

// Solves A x = b for a square, checked `a` with double values; b and x are [rows, nrhs]
// row-major. `solver` is SparseSolve's attribute: "umfpack" (multifrontal, BLAS inside: fast
// where factors fill in, as on meshes) or "klu" (no BLAS, for the very sparse matrices of
// circuits). A singular matrix is a user error.
void sparse_lu_solve(const Csr& a, const double* values, const double* b, int64_t nrhs, double* x,
                     const std::string& solver, const std::string& where);

// CG's attributes (core/src/ops/ops_krylov.cpp).
struct CgOptions {
  double tol = 1e-10;
  int64_t max_iter = 1000;
  bool jacobi = false;
};

// CG natively (sparse_cg.cpp) on a checked square `a`: values, rhs, x and residual are double
// when f64, else float.
void run_cg(const Csr& a, const void* values, const void* rhs, bool f64, const CgOptions& o,
            void* x, int32_t* iterations, void* residual);

}  // namespace rlx::cpu
