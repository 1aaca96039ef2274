// Dense factorizations on the cpu through LAPACKE, one LAPACK call per matrix of the batch.
// Inputs are copied first (LAPACK works in place and rlx inputs are read-only). LAPACKE's
// row-major layout transposes the matrix in and out of every call, which cost LU a quarter of
// its time at 512-1024 against SciPy; so where a routine has a column-major form that answers
// the same question of the transposed matrix, the row-major buffer is handed over as it is:
// Cholesky's lower factor is the upper factor of a^T = a, a^-1 = ((a^T)^-1)^T and det a =
// det a^T. LU factors the row-major buffer itself (row_major_lu.h). info < 0 is a bug in
// these calls; info > 0 is a property of the input, reported as a user error that says which matrix
// and what to do.
#include <fmt/format.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "linalg_kernels.h"
#include "row_major_lu.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// Overloads that pick the s/d routine by element type.
// The lower factor of a row-major a: the column-major upper factor of the same buffer.
lapack_int potrf(float* a, lapack_int n) {
  return LAPACKE_spotrf(LAPACK_COL_MAJOR, 'U', n, a, n);
}
lapack_int potrf(double* a, lapack_int n) {
  return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', n, a, n);
}
// Column-major: `a` holds m x n with leading dimension m.
lapack_int getrf_col_major(float* a, lapack_int m, lapack_int n, lapack_int* p) {
  return LAPACKE_sgetrf(LAPACK_COL_MAJOR, m, n, a, m, p);
}
lapack_int getrf_col_major(double* a, lapack_int m, lapack_int n, lapack_int* p) {
  return LAPACKE_dgetrf(LAPACK_COL_MAJOR, m, n, a, m, p);
}
lapack_int getri_col_major(float* a, lapack_int n, const lapack_int* p) {
  return LAPACKE_sgetri(LAPACK_COL_MAJOR, n, a, n, p);
}
lapack_int getri_col_major(double* a, lapack_int n, const lapack_int* p) {
  return LAPACKE_dgetri(LAPACK_COL_MAJOR, n, a, n, p);
}
// dst[j][i] = src[i][j] for a row-major m x n src, in blocks so both sides stay in cache: 16 x
// 16, because 32 rows of a power-of-two stride share too few L1 sets (a 1024 x 1024 transpose
// took 5.1 ms in 32-blocks, 2.0 in 16-blocks here).
template <typename T>
void transpose(const T* src, T* dst, int64_t m, int64_t n) {
  constexpr int64_t kBlock = 16;
  for (int64_t i0 = 0; i0 < m; i0 += kBlock)
    for (int64_t j0 = 0; j0 < n; j0 += kBlock)
      for (int64_t i = i0; i < std::min(m, i0 + kBlock); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + kBlock); ++j) dst[j * m + i] = src[i * n + j];
}
lapack_int gesv(float* a, lapack_int n, lapack_int k, lapack_int* p, float* b) {
  return LAPACKE_sgesv(LAPACK_ROW_MAJOR, n, k, a, n, p, b, k);
}
lapack_int gesv(double* a, lapack_int n, lapack_int k, lapack_int* p, double* b) {
  return LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, k, a, n, p, b, k);
}
lapack_int trtrs(const float* a, char uplo, char trans, char diag, lapack_int n, lapack_int k,
                 float* b) {
  return LAPACKE_strtrs(LAPACK_ROW_MAJOR, uplo, trans, diag, n, k, a, n, b, k);
}
lapack_int trtrs(const double* a, char uplo, char trans, char diag, lapack_int n, lapack_int k,
                 double* b) {
  return LAPACKE_dtrtrs(LAPACK_ROW_MAJOR, uplo, trans, diag, n, k, a, n, b, k);
}
lapack_int geqrf(float* a, lapack_int m, lapack_int n, float* tau) {
  return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
}
lapack_int geqrf(double* a, lapack_int m, lapack_int n, double* tau) {
  return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);
}
lapack_int orgqr(float* q, lapack_int m, lapack_int k, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, m, k, k, q, k, tau);
}
lapack_int orgqr(double* q, lapack_int m, lapack_int k, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, k, k, q, k, tau);
}
// The SVD of a row-major m x n `a`, read column-major as a^T = U' S V'^T: then a = V' S U'^T, and
// LAPACK's column-major V'^T (k x m) read row-major is u [m, k], its U' (n x k) read row-major is
// vt [k, n]; so each factor is written straight into the other's buffer, with no transposes.
lapack_int gesdd(float* a, lapack_int m, lapack_int n, float* s, float* u, float* vt) {
  const lapack_int k = std::min(m, n);
  return LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'S', n, m, a, n, s, vt, n, u, k);
}
lapack_int gesdd(double* a, lapack_int m, lapack_int n, double* s, double* u, double* vt) {
  const lapack_int k = std::min(m, n);
  return LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', n, m, a, n, s, vt, n, u, k);
}
// Column-major: a symmetric row-major `a` read column-major is itself with the triangles swapped,
// so `uplo` names the column-major triangle; the eigenvectors come back as columns of the
// column-major result.
lapack_int syevd_col_major(float* a, char uplo, lapack_int n, float* w) {
  return LAPACKE_ssyevd(LAPACK_COL_MAJOR, 'V', uplo, n, a, n, w);
}
lapack_int syevd_col_major(double* a, char uplo, lapack_int n, double* w) {
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', uplo, n, a, n, w);
}

int64_t attr_flag(const lir::CallKernel& k, const char* key, int64_t fallback) {
  auto it = k.attrs.find(key);
  if (it == k.attrs.end()) return fallback;
  return std::get<int64_t>(it->second);
}

// One op over a batch of matrices; T is float or double.
template <typename T>
class Dense {
 public:
  Dense(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
        const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs, std::string where)
      : k_(k), in_(in), out_(out), ptrs_(ptrs), where_(std::move(where)) {
    const auto& s = in[0].shape;
    m_ = s[s.size() - 2], n_ = s.back();
    batch_ = m_ > 0 && n_ > 0 ? in[0].numel() / (m_ * n_) : 0;
    if (std::max(m_, n_) > std::numeric_limits<lapack_int>::max())
      throw_user_error(
          fmt::format("{}: a {} x {} matrix is beyond LAPACK's 32-bit sizes", where_, m_, n_));
  }

  void run(const std::string& op) {
    if (op == "Cholesky") return for_each([&](int64_t b) { cholesky(b); });
    if (op == "LU") return for_each([&](int64_t b) { lu(b); });
    if (op == "Solve") return for_each([&](int64_t b) { solve(b); });
    if (op == "TriangularSolve") return for_each([&](int64_t b) { triangular_solve(b); });
    if (op == "Inverse") return for_each([&](int64_t b) { inverse(b); });
    if (op == "Det" || op == "LogDet") return for_each([&](int64_t b) { det(b, op == "LogDet"); });
    if (op == "QR") return for_each([&](int64_t b) { qr(b); });
    if (op == "SVD") return for_each([&](int64_t b) { svd(b); });
    if (op == "Eigh") return for_each([&](int64_t b) { eigh(b); });
    throw_internal_error("cpu: no dense kernel for " + op);
  }

 private:
  const lir::CallKernel& k_;
  const std::vector<lir::Buffer>&in_, &out_;
  const std::vector<void*>& ptrs_;
  std::string where_;
  int64_t m_ = 0, n_ = 0, batch_ = 0;

  template <typename F>
  void for_each(F&& f) {
    for (int64_t b = 0; b < batch_; ++b) f(b);
  }
  const T* in(size_t i) const { return static_cast<const T*>(ptrs_[k_.inputs[i]]); }
  template <typename U = T>
  U* out(size_t i) const {
    return static_cast<U*>(ptrs_[k_.outputs[i]]);
  }
  std::vector<T> copy_of_a(int64_t b) const {
    const T* a = in(0) + b * m_ * n_;
    return std::vector<T>(a, a + m_ * n_);
  }
  // Columns of the right-hand side (1 for a vector b).
  int64_t rhs_cols() const { return in_[1].shape.size() == 1 ? 1 : in_[1].shape.back(); }
  std::string matrix(int64_t b) const {
    return batch_ > 1 ? fmt::format("matrix {} of the batch", b) : std::string("the matrix");
  }
  void check(lapack_int info, const char* routine) const {
    if (info < 0)
      throw_internal_error(
          fmt::format("{}: LAPACK {} rejected argument {}", where_, routine, -info));
  }
  [[noreturn]] void singular(int64_t b, lapack_int info, const char* routine) const {
    throw_user_error(fmt::format(
        "{}: {} is singular: U({},{}) is exactly zero after partial pivoting (LAPACK {} info = "
        "{}); the system has no unique solution. Check the input for a zero or repeated row, or "
        "use a least-squares method",
        where_, matrix(b), info, info, routine, info));
  }

  [[noreturn]] void not_converged(int64_t b, lapack_int info, const char* what,
                                  const char* routine) const {
    throw_user_error(
        fmt::format("{}: {} of {} did not converge (LAPACK {} info = {}); check the "
                    "input's scaling (entries far apart in magnitude)",
                    where_, what, matrix(b), routine, info));
  }

  void cholesky(int64_t b) {
    T* l = out(0) + b * n_ * n_;
    std::memcpy(l, in(0) + b * n_ * n_, sizeof(T) * n_ * n_);
    lapack_int info = potrf(l, static_cast<lapack_int>(n_));
    check(info, "potrf");
    if (info > 0)
      throw_user_error(fmt::format(
          "{}: {} is not positive definite: its leading minor of order {} is not positive "
          "(LAPACK potrf info = {}). Cholesky needs a symmetric positive definite matrix; use LU "
          "or Solve for a general one",
          where_, matrix(b), info, info));
    for (int64_t i = 0; i < n_; ++i)
      for (int64_t j = i + 1; j < n_; ++j) l[i * n_ + j] = T(0);  // potrf leaves the upper half
  }

  void lu(int64_t b) {
    const int64_t k = std::min(m_, n_);
    T* a = out(0) + b * m_ * n_;
    std::memcpy(a, in(0) + b * m_ * n_, sizeof(T) * m_ * n_);
    // An exactly zero pivot still leaves a valid factorization, as in lu_factor.
    lu_row_major(a, m_, n_, out<int32_t>(1) + b * k);
  }

  void solve(int64_t b) {
    const int64_t c = rhs_cols();
    std::vector<T> a = copy_of_a(b);
    T* x = out(0) + b * n_ * c;
    std::memcpy(x, in(1) + b * n_ * c, sizeof(T) * n_ * c);
    std::vector<lapack_int> piv(static_cast<size_t>(n_));
    lapack_int info =
        gesv(a.data(), static_cast<lapack_int>(n_), static_cast<lapack_int>(c), piv.data(), x);
    check(info, "gesv");
    if (info > 0) singular(b, info, "gesv");
  }

  void triangular_solve(int64_t b) {
    const int64_t c = rhs_cols();
    T* x = out(0) + b * n_ * c;
    std::memcpy(x, in(1) + b * n_ * c, sizeof(T) * n_ * c);
    const char uplo = attr_flag(k_, "lower", 1) ? 'L' : 'U';
    const char trans = attr_flag(k_, "transpose", 0) ? 'T' : 'N';
    const char diag = attr_flag(k_, "unit_diagonal", 0) ? 'U' : 'N';
    lapack_int info = trtrs(in(0) + b * n_ * n_, uplo, trans, diag, static_cast<lapack_int>(n_),
                            static_cast<lapack_int>(c), x);
    check(info, "trtrs");
    if (info > 0)
      throw_user_error(fmt::format(
          "{}: {} is singular: its diagonal element {} is exactly zero (LAPACK trtrs info = {})",
          where_, matrix(b), info, info));
  }

  void inverse(int64_t b) {
    T* a = out(0) + b * n_ * n_;
    std::memcpy(a, in(0) + b * n_ * n_, sizeof(T) * n_ * n_);
    std::vector<lapack_int> piv(static_cast<size_t>(n_));
    // The buffer read column-major is a^T; its inverse read back row-major is a^-1.
    lapack_int info =
        getrf_col_major(a, static_cast<lapack_int>(n_), static_cast<lapack_int>(n_), piv.data());
    check(info, "getrf");
    if (info > 0) singular(b, info, "getrf");
    check(getri_col_major(a, static_cast<lapack_int>(n_), piv.data()), "getri");
  }

  // det = (-1)^swaps * prod(diag U); a zero pivot gives det 0 (log|det| = -inf, sign 0), as
  // numpy does, since a singular matrix has a well-defined determinant.
  void det(int64_t b, bool log) {
    std::vector<T> a = copy_of_a(b);
    std::vector<lapack_int> piv(static_cast<size_t>(n_));
    // det a^T = det a: the buffer is factored as it is, read column-major.
    check(getrf_col_major(a.data(), static_cast<lapack_int>(n_), static_cast<lapack_int>(n_),
                          piv.data()),
          "getrf");
    T sign = 1, logabs = 0, prod = 1;
    for (int64_t i = 0; i < n_; ++i) {
      const T u = a[i * n_ + i];
      if (piv[i] != i + 1) sign = -sign, prod = -prod;
      if (u < 0) sign = -sign;
      if (u == T(0)) sign = 0;
      logabs += std::log(std::abs(u));
      prod *= u;
    }
    if (!log) {
      out(0)[b] = prod;
      return;
    }
    out(0)[b] = sign;
    out(1)[b] = sign == T(0) ? -std::numeric_limits<T>::infinity() : logabs;
  }

  void qr(int64_t b) {
    const int64_t k = std::min(m_, n_);
    std::vector<T> a = copy_of_a(b), tau(static_cast<size_t>(k));
    check(geqrf(a.data(), static_cast<lapack_int>(m_), static_cast<lapack_int>(n_), tau.data()),
          "geqrf");
    T* r = out(1) + b * k * n_;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < n_; ++j) r[i * n_ + j] = j >= i ? a[i * n_ + j] : T(0);
    T* q = out(0) + b * m_ * k;
    for (int64_t i = 0; i < m_; ++i) std::memcpy(q + i * k, a.data() + i * n_, sizeof(T) * k);
    check(orgqr(q, static_cast<lapack_int>(m_), static_cast<lapack_int>(k), tau.data()), "orgqr");
  }

  void svd(int64_t b) {
    const int64_t k = std::min(m_, n_);
    std::vector<T> a = copy_of_a(b);
    lapack_int info = gesdd(a.data(), static_cast<lapack_int>(m_), static_cast<lapack_int>(n_),
                            out(1) + b * k, out(0) + b * m_ * k, out(2) + b * k * n_);
    check(info, "gesdd");
    if (info > 0) not_converged(b, info, "the SVD", "gesdd");
  }

  void eigh(int64_t b) {
    std::vector<T> a = copy_of_a(b);
    // The row-major lower triangle is the column-major upper one.
    const char uplo = attr_flag(k_, "lower", 1) ? 'U' : 'L';
    lapack_int info = syevd_col_major(a.data(), uplo, static_cast<lapack_int>(n_), out(0) + b * n_);
    check(info, "syevd");
    if (info > 0) not_converged(b, info, "the eigenvalues", "syevd");
    transpose(a.data(), out(1) + b * n_ * n_, n_, n_);  // column-major eigenvectors to row-major
  }
};

// NaN or infinity in the input makes LAPACK loop or return garbage; refuse it up front.
template <typename T>
void reject_non_finite(const lir::Buffer& buf, const void* p, const std::string& where,
                       const char* what) {
  const T* v = static_cast<const T*>(p);
  for (int64_t i = 0; i < buf.numel(); ++i)
    if (!std::isfinite(v[i]))
      throw_user_error(
          fmt::format("{}: {} holds a non-finite value ({}) at flat index {}; "
                      "factorizations need finite inputs",
                      where, what, v[i], i));
}

}  // namespace

void run_dense_linalg(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                      const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs,
                      const std::string& where) {
  const std::string op = k.callee.substr(std::string("native:").size());
  if (in[0].dtype == DType::kF64) {
    for (size_t i = 0; i < in.size(); ++i)
      reject_non_finite<double>(in[i], ptrs[k.inputs[i]], where, i ? "b" : "a");
    return Dense<double>(k, in, out, ptrs, where).run(op);
  }
  for (size_t i = 0; i < in.size(); ++i)
    reject_non_finite<float>(in[i], ptrs[k.inputs[i]], where, i ? "b" : "a");
  Dense<float>(k, in, out, ptrs, where).run(op);
}

}  // namespace rlx::cpu
