// The small CUDA kernels around the cuSOLVER routines of one dense linear algebra call
// (dense_linalg_call.cpp): layout changes between rlx's row-major matrices and the libraries'
// column-major ones, the status buffer's reset, input checks, and the pieces LAPACK leaves to
// the caller (a triangle to clear, 0-based pivots, a determinant from the LU diagonal). Shapes
// are constants of the text, as in every kernel the target writes; one module per call.
#pragma once
#include <cstdint>
#include <string>

namespace rlx::cuda {

// What decides the helper kernels of one call.
struct LinalgCallShape {
  std::string op;        // "Cholesky", ...
  bool f64 = false;      // else f32
  int64_t m = 0, n = 0;  // of each matrix a
  int64_t batch = 0;     // matrices in a
  int64_t rhs_cols = 0;  // Solve and TriangularSolve: columns of b (1 for a vector)
  bool unit_diagonal = false;
  int64_t a_numel() const { return batch * m * n; }
  int64_t b_numel() const { return batch * n * rhs_cols; }
  int64_t status_ints() const { return 2 + 2 * batch; }
};

// The source of the helper module the call with `shape` builds (dense_linalg_call.cpp launches
// its kernels by these names).
std::string linalg_helper_source(const LinalgCallShape& shape);

class LinalgHelperKernels {
 public:
  // `type` is "float" or "double"; `batch` matrices; `status_ints` the status buffer's length.
  LinalgHelperKernels(std::string type, int64_t batch, int64_t status_ints);

  // init(status, flags): status[] = 0, flags[0..1] = no non-finite value seen.
  void add_init();
  // finite_<slot>(x, flags): flags[slot] = the smallest flat index of a NaN or infinity in x.
  void add_finite(int slot, int64_t count);
  // <name>(src, dst): each of the batch's row-major rows x cols matrices of src transposed into
  // dst (so dst holds it column-major). Matrices of src start every src_stride elements (0:
  // rows x cols, packed); dst's are packed.
  void add_transpose(const std::string& name, int64_t rows, int64_t cols, int64_t src_stride = 0);
  // zero_upper(l): the strict upper triangle of each n x n row-major matrix set to zero.
  void add_zero_upper(int64_t n);
  // identity(x): each n x n matrix the identity.
  void add_identity(int64_t n);
  // pivots(ipiv, out): LAPACK's 1-based pivots (count per matrix) made 0-based.
  void add_pivots(int64_t count);
  // determinant(lu, ipiv, det[, logabs]): from each column-major n x n LU factorization, the
  // determinant, or (log) its sign and log|det| (numpy.linalg.slogdet's convention).
  void add_determinant(int64_t n, bool log);
  // upper_r(a, r): r [k, cols] row-major, the upper triangle of each column-major rows x cols a.
  void add_upper_r(int64_t rows, int64_t cols, int64_t k);
  // zero_diagonal(a, status): status[2 + b] = 1 + the first diagonal index of row-major n x n
  // matrix b that is exactly zero (0 when none), as LAPACK's trtrs reports it.
  void add_zero_diagonal(int64_t n);

  const std::string& source() const { return source_; }

 private:
  std::string type_;
  int64_t batch_, status_ints_;
  std::string source_;
  void add(const std::string& name, const std::string& params, int64_t work,
           const std::string& body);
};

}  // namespace rlx::cuda
