// Sparse LU through SuiteSparse: UMFPACK (multifrontal, dense BLAS kernels on the frontal
// matrices) and KLU (left-looking, no BLAS). Both factor a compressed-column matrix; our CSR
// arrays read as CSC describe A^T, so each solves with the transpose of what it factored, which
// is A. Both run their 64-bit-index forms (the 32-bit ones overflow their workspace on a 3D
// Poisson problem of 64^3 unknowns), with the values in double.
#include <fmt/format.h>
#include <suitesparse/klu.h>
#include <suitesparse/umfpack.h>

#include <memory>
#include <vector>

#include "rlx/core/error.h"
#include "sparse_csr.h"

namespace rlx::cpu {

namespace {

using Index = SuiteSparse_long;

struct Columns {
  std::vector<Index> ptr, idx;
};

Columns wide_structure(const Csr& a) {
  Columns c;
  c.ptr.resize(static_cast<size_t>(a.rows + 1));
  c.idx.resize(static_cast<size_t>(a.nnz));
  for (int64_t i = 0; i <= a.rows; ++i) c.ptr[i] = static_cast<Index>(a.ptr(i));
  for (int64_t j = 0; j < a.nnz; ++j) c.idx[j] = static_cast<Index>(a.col(j));
  return c;
}

std::string singular(const std::string& where, const std::string& detail) {
  return fmt::format(
      "{}: the sparse matrix is singular ({}); the system has no unique solution. Check for an "
      "empty row or column, or a zero pivot",
      where, detail);
}

// Right-hand sides arrive row-major [n, nrhs]; both libraries take them a column at a time.
std::vector<double> to_columns(const double* b, int64_t n, int64_t nrhs) {
  std::vector<double> cols(static_cast<size_t>(n * nrhs));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < nrhs; ++c) cols[c * n + i] = b[i * nrhs + c];
  return cols;
}

void from_columns(const std::vector<double>& cols, int64_t n, int64_t nrhs, double* x) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < nrhs; ++c) x[i * nrhs + c] = cols[c * n + i];
}

void klu_solve(const Csr& a, const double* values, const double* b, int64_t nrhs, double* x,
               const std::string& where) {
  Columns s = wide_structure(a);
  klu_l_common common;
  klu_l_defaults(&common);
  const auto n = static_cast<Index>(a.rows);
  auto free_symbolic = [&](klu_l_symbolic* p) { klu_l_free_symbolic(&p, &common); };
  auto free_numeric = [&](klu_l_numeric* p) { klu_l_free_numeric(&p, &common); };
  std::unique_ptr<klu_l_symbolic, decltype(free_symbolic)> sym(
      klu_l_analyze(n, s.ptr.data(), s.idx.data(), &common), free_symbolic);
  if (!sym)
    throw_user_error(fmt::format("{}: KLU could not analyze the matrix (status {}{})", where,
                                 common.status,
                                 common.status == KLU_SINGULAR ? ": it is singular" : ""));
  std::unique_ptr<klu_l_numeric, decltype(free_numeric)> num(
      klu_l_factor(s.ptr.data(), s.idx.data(), const_cast<double*>(values), sym.get(), &common),
      free_numeric);
  if (!num || common.status == KLU_SINGULAR)
    throw_user_error(singular(
        where, fmt::format("KLU status {}{}", common.status,
                           common.status == KLU_SINGULAR
                               ? fmt::format(", first zero pivot in column {}", common.singular_col)
                               : std::string())));
  std::vector<double> cols = to_columns(b, a.rows, nrhs);
  if (!klu_l_tsolve(sym.get(), num.get(), n, static_cast<Index>(nrhs), cols.data(), &common))
    throw_user_error(fmt::format("{}: KLU's solve failed (status {})", where, common.status));
  from_columns(cols, a.rows, nrhs, x);
}

void umfpack_solve(const Csr& a, const double* values, const double* b, int64_t nrhs, double* x,
                   const std::string& where) {
  Columns s = wide_structure(a);
  const auto n = static_cast<Index>(a.rows);
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  umfpack_dl_defaults(control);
  void* symbolic = nullptr;
  void* numeric = nullptr;
  auto release = [&] {
    if (symbolic) umfpack_dl_free_symbolic(&symbolic);
    if (numeric) umfpack_dl_free_numeric(&numeric);
  };
  auto fail = [&](const std::string& message) {
    release();
    throw_user_error(message);
  };
  int status =
      umfpack_dl_symbolic(n, n, s.ptr.data(), s.idx.data(), values, &symbolic, control, info);
  if (status == UMFPACK_ERROR_out_of_memory)
    fail(fmt::format("{}: UMFPACK ran out of memory analyzing the matrix ({} x {}, {} nonzeros)",
                     where, a.rows, a.rows, a.nnz));
  if (status != UMFPACK_OK)
    fail(fmt::format("{}: UMFPACK could not analyze the matrix (status {})", where, status));
  status =
      umfpack_dl_numeric(s.ptr.data(), s.idx.data(), values, symbolic, &numeric, control, info);
  if (status == UMFPACK_WARNING_singular_matrix)
    fail(singular(where, "UMFPACK found a zero pivot"));
  if (status == UMFPACK_ERROR_out_of_memory)
    fail(
        fmt::format("{}: UMFPACK ran out of memory factoring the matrix ({} nonzeros); try "
                    "SparseSolve's solver = \"klu\" or CG",
                    where, a.nnz));
  if (status != UMFPACK_OK)
    fail(fmt::format("{}: UMFPACK could not factor the matrix (status {})", where, status));
  std::vector<double> cols = to_columns(b, a.rows, nrhs), sol(cols.size());
  for (int64_t c = 0; c < nrhs; ++c) {
    status = umfpack_dl_solve(UMFPACK_At, s.ptr.data(), s.idx.data(), values, sol.data() + c * n,
                              cols.data() + c * n, numeric, control, info);
    if (status != UMFPACK_OK)
      fail(fmt::format("{}: UMFPACK's solve failed (status {})", where, status));
  }
  release();
  from_columns(sol, a.rows, nrhs, x);
}

}  // namespace

void sparse_lu_solve(const Csr& a, const double* values, const double* b, int64_t nrhs, double* x,
                     const std::string& solver, const std::string& where) {
  if (solver == "klu") return klu_solve(a, values, b, nrhs, x, where);
  umfpack_solve(a, values, b, nrhs, x, where);
}

}  // namespace rlx::cpu
