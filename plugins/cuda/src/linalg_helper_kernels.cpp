#include "linalg_helper_kernels.h"

#include <fmt/format.h>

#include <algorithm>

namespace rlx::cuda {

LinalgHelperKernels::LinalgHelperKernels(std::string type, int64_t batch, int64_t status_ints)
    : type_(std::move(type)), batch_(batch), status_ints_(status_ints) {
  source_ = "// Helper kernels of one dense linear algebra call (cuSOLVER does the factoring).\n";
}

// One thread per work-item; `i` is its index. The launch rounds the grid up.
void LinalgHelperKernels::add(const std::string& name, const std::string& params, int64_t work,
                              const std::string& body) {
  source_ += fmt::format(
      "extern \"C\" __global__ void {}({}) {{\n"
      "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i >= {}LL) return;\n"
      "  typedef {} T;\n"
      "{}}}\n",
      name, params, work, type_, body);
}

void LinalgHelperKernels::add_init() {
  add("init", "int* status, unsigned long long* flags", status_ints_,
      "  status[i] = 0;\n"
      "  if (i < 2) flags[i] = ~0ULL;\n");
}

void LinalgHelperKernels::add_finite(int slot, int64_t count) {
  add(fmt::format("finite_{}", slot), fmt::format("const {}* x, unsigned long long* flags", type_),
      count,
      fmt::format("  if (!isfinite(x[i])) atomicMin(&flags[{}], (unsigned long long)i);\n", slot));
}

void LinalgHelperKernels::add_transpose(const std::string& name, int64_t rows, int64_t cols,
                                        int64_t src_stride) {
  add(name, fmt::format("const {0}* src, {0}* dst", type_), batch_ * rows * cols,
      fmt::format("  const long long b = i / {0}LL, r = (i % {0}LL) / {1}LL, c = i % {1}LL;\n"
                  "  dst[b * {0}LL + c * {2}LL + r] = src[b * {3}LL + r * {1}LL + c];\n",
                  rows * cols, cols, rows, src_stride > 0 ? src_stride : rows * cols));
}

void LinalgHelperKernels::add_zero_upper(int64_t n) {
  add("zero_upper", fmt::format("{}* l", type_), batch_ * n * n,
      fmt::format("  if (i % {0}LL > (i % {1}LL) / {0}LL) l[i] = T(0);\n", n, n * n));
}

void LinalgHelperKernels::add_identity(int64_t n) {
  add("identity", fmt::format("{}* x", type_), batch_ * n * n,
      fmt::format("  x[i] = i % {0}LL == (i % {1}LL) / {0}LL ? T(1) : T(0);\n", n, n * n));
}

void LinalgHelperKernels::add_pivots(int64_t count) {
  add("pivots", "const int* ipiv, int* out", batch_ * count, "  out[i] = ipiv[i] - 1;\n");
}

void LinalgHelperKernels::add_determinant(int64_t n, bool log) {
  const std::string params = fmt::format("const {0}* lu, const int* ipiv, {0}* det{1}", type_,
                                         log ? fmt::format(", {}* logabs", type_) : "");
  // A zero pivot gives det 0 (sign 0, log|det| = -inf), as numpy does.
  std::string body = fmt::format(
      "  const T* a = lu + i * {0}LL;\n"
      "  T sign = 1, logsum = 0, prod = 1;\n"
      "  for (int j = 0; j < {1}; ++j) {{\n"
      "    const T u = a[j * {1} + j];\n"
      "    if (ipiv[i * {1}LL + j] != j + 1) {{ sign = -sign; prod = -prod; }}\n"
      "    if (u < T(0)) sign = -sign;\n"
      "    if (u == T(0)) sign = T(0);\n"
      "    logsum += log(fabs(u));\n"
      "    prod *= u;\n"
      "  }}\n",
      n * n, n);
  body += log ? "  det[i] = sign;\n  logabs[i] = sign == T(0) ? log(T(0)) : logsum;\n"
              : "  det[i] = prod;\n";
  add(log ? "logdet" : "determinant", params, batch_, body);
}

void LinalgHelperKernels::add_upper_r(int64_t rows, int64_t cols, int64_t k) {
  add("upper_r", fmt::format("const {0}* a, {0}* r", type_), batch_ * k * cols,
      fmt::format("  const long long b = i / {0}LL, r_ = (i % {0}LL) / {1}LL, c = i % {1}LL;\n"
                  "  r[i] = c >= r_ ? a[b * {2}LL + c * {3}LL + r_] : T(0);\n",
                  k * cols, cols, rows * cols, rows));
}

void LinalgHelperKernels::add_zero_diagonal(int64_t n) {
  add("zero_diagonal", fmt::format("const {}* a, int* status", type_), batch_,
      fmt::format(
          "  for (int j = 0; j < {0}; ++j)\n"
          "    if (a[i * {1}LL + j * {0} + j] == T(0)) {{ status[2 + i] = j + 1; return; }}\n",
          n, n * n));
}

std::string linalg_helper_source(const LinalgCallShape& s) {
  LinalgHelperKernels k(s.f64 ? "double" : "float", s.batch, s.status_ints());
  const int64_t m = s.m, n = s.n, kk = std::min(m, n);
  k.add_init();
  k.add_finite(0, s.a_numel());
  if (s.rhs_cols > 0) k.add_finite(1, s.b_numel());
  if (s.op == "Cholesky") k.add_zero_upper(n);
  if (s.op == "LU") {
    k.add_transpose("to_columns", m, n);
    k.add_transpose("to_rows", n, m);
    k.add_pivots(kk);
  }
  if (s.op == "Solve") k.add_transpose("to_columns", n, n);
  if (s.op == "Solve" && s.rhs_cols > 1) {
    k.add_transpose("rhs_to_columns", n, s.rhs_cols);
    k.add_transpose("rhs_to_rows", s.rhs_cols, n);
  }
  if (s.op == "Inverse") k.add_identity(n);
  if (s.op == "Det" || s.op == "LogDet") k.add_determinant(n, s.op == "LogDet");
  if (s.op == "TriangularSolve" && !s.unit_diagonal) k.add_zero_diagonal(n);
  if (s.op == "QR") {
    k.add_transpose("to_columns", m, n);
    k.add_upper_r(m, n, kk);
    // Q is the first k columns of each column-major m x n slot.
    k.add_transpose("q_to_rows", kk, m, m * n);
  }
  if (s.op == "SVD" && m > n) {
    k.add_transpose("to_columns", m, n);
    k.add_transpose("u_to_rows", kk, m);
    k.add_transpose("vt_to_rows", n, kk);
  }
  if (s.op == "Eigh") k.add_transpose("to_rows", n, n);
  return k.source();
}

}  // namespace rlx::cuda
