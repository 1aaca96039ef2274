// Row-major rlx matrices meet column-major libraries as the cpu's LAPACK calls meet them
// (plugins/cpu/src/dense_linalg.cpp): where a routine answers the same question of the
// transposed matrix, the buffer is handed over as it is (Cholesky of a symmetric a, Inverse and
// Det through the LU of a^T, Eigh, TriangularSolve as x^T op(a)^T = b^T, a wide SVD);
// otherwise a helper kernel transposes in and out (LU, QR, a tall SVD, Solve).
// Every routine writes its LAPACK info into a status buffer that check() reads after the run, so
// a singular or indefinite input is the same user error as on the cpu; NaN and infinity in an
// input are refused the same way, found by a kernel before the factorization.
#include "dense_linalg_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <limits>

#include "linalg_helper_kernels.h"
#include "rlx/core/error.h"
#include "rlx/sdk/legality.h"
#include "solver_api.h"

namespace rlx::cuda {

namespace {

constexpr std::array<const char*, 10> kOps = {
    "Cholesky", "LU", "Solve", "TriangularSolve", "Inverse", "Det", "LogDet", "QR", "SVD", "Eigh"};

bool is_dense_op(const std::string& op) {
  return std::find(kOps.begin(), kOps.end(), op) != kOps.end();
}

int64_t flag(const lir::CallKernel& k, const char* key, int64_t fallback) {
  auto it = k.attrs.find(key);
  return it == k.attrs.end() ? fallback : std::get<int64_t>(it->second);
}

// Owns device memory of the call's scratch buffers.
class Scratch {
 public:
  explicit Scratch(CudaDevice& device) : device_(device) {}
  ~Scratch() {
    for (gpu_host::DeviceBuffer& b : owned_) device_.release(b);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // At least one byte, so every routine gets a valid pointer.
  const gpu_host::DeviceBuffer& get(size_t bytes) {
    owned_.push_back(device_.allocate(std::max<size_t>(bytes, 1)));
    return owned_.back();
  }

 private:
  CudaDevice& device_;
  std::deque<gpu_host::DeviceBuffer> owned_;  // a deque: references stay valid
};

template <typename T>
T* at(const gpu_host::DeviceBuffer& b, int64_t elements = 0) {
  return static_cast<T*>(b.handle) + elements;
}

template <typename T>
class DenseCall final : public gpu_host::VendorCall {
 public:
  DenseCall(CudaDevice& device, const SolverApi& api, const lir::CallKernel& call,
            const lir::Program& program)
      : device_(device),
        r_(api.routines<T>()),
        solver_(solver_handle(api, device.context().stream)),
        blas_(blas_handle(api, device.context().stream)),
        op_(call.callee.substr(7)),
        scratch_(device) {
    where_ = call.loc.empty() ? op_ : fmt::format("{} ('{}')", op_, call.loc);
    const lir::Buffer& a = program.buffers.at(call.inputs.at(0));
    m_ = a.shape[a.shape.size() - 2], n_ = a.shape.back(), k_ = std::min(m_, n_);
    batch_ = m_ > 0 && n_ > 0 ? a.numel() / (m_ * n_) : 0;
    if (std::max(m_, n_) > std::numeric_limits<int>::max())
      throw_user_error(
          fmt::format("{}: a {} x {} matrix is beyond cuSOLVER's 32-bit sizes", where_, m_, n_));
    a_numel_ = a.numel();
    if (call.inputs.size() > 1) {
      const lir::Buffer& b = program.buffers.at(call.inputs[1]);
      c_ = b.shape.size() == 1 ? 1 : b.shape.back();
      b_numel_ = b.numel();
    }
    lower_ = flag(call, "lower", 1) != 0;
    transpose_ = flag(call, "transpose", 0) != 0;
    unit_ = flag(call, "unit_diagonal", 0) != 0;
    if (batch_ == 0) return;
    plan();
  }

  void run(const std::vector<const gpu_host::DeviceBuffer*>& operands) override {
    if (batch_ == 0) return;
    launch("init", {status_, flags_}, status_ints_);
    launch("finite_0", {operands[0], flags_}, a_numel_);
    if (b_numel_ > 0) launch("finite_1", {operands[1], flags_}, b_numel_);
    const gpu_host::DeviceBuffer& a = *operands[0];
    const auto out = [&](size_t i) -> const gpu_host::DeviceBuffer& {
      return *operands.at(operands.size() - outputs_ + i);
    };
    if (op_ == "Cholesky") return cholesky(a, out(0));
    if (op_ == "LU") return lu(a, out(0), out(1));
    if (op_ == "Solve") return solve(a, *operands[1], out(0));
    if (op_ == "TriangularSolve") return triangular_solve(a, *operands[1], out(0));
    if (op_ == "Inverse") return inverse(a, out(0));
    if (op_ == "Det") return determinant(a, out(0), nullptr);
    if (op_ == "LogDet") return determinant(a, out(0), &out(1));
    if (op_ == "QR") return qr(a, out(0), out(1));
    if (op_ == "SVD") return svd(a, out(0), out(1), out(2));
    return eigh(a, out(0), out(1));
  }

  void check() override {
    if (batch_ == 0) return;
    std::array<unsigned long long, 2> flags{};
    device_.download(*flags_, flags.data(), sizeof flags);
    for (int slot = 0; slot < 2; ++slot)
      if (flags[slot] != ~0ULL)
        throw_user_error(fmt::format(
            "{}: {} holds a non-finite value at flat index {}; factorizations need finite inputs",
            where_, slot ? "b" : "a", flags[slot]));
    std::vector<int> status(static_cast<size_t>(status_ints_));
    device_.download(*status_, status.data(), status.size() * sizeof(int));
    for (int64_t b = 0; b < batch_; ++b) {
      const int info = status[2 + b], after = status[2 + batch_ + b];
      if (info < 0 || after < 0)
        throw_internal_error(
            fmt::format("{}: {} rejected argument {}", where_, routine_, -std::min(info, after)));
      // An exactly zero pivot still leaves a valid LU (as in lu_factor) and a determinant of 0.
      if (info > 0 && op_ != "LU" && op_ != "Det" && op_ != "LogDet") report(b, info);
    }
  }

 private:
  CudaDevice& device_;
  const SolverRoutines<T>& r_;
  SolverHandle solver_;
  BlasHandle blas_;
  std::string op_, where_, routine_;
  Scratch scratch_;
  int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 0, c_ = 0, a_numel_ = 0, b_numel_ = 0;
  bool lower_ = true, transpose_ = false, unit_ = false;
  size_t outputs_ = 1;
  // status: [unused, unused, first routine's info per matrix, later routine's info per matrix].
  int64_t status_ints_ = 0;
  const gpu_host::DeviceBuffer *status_ = nullptr, *flags_ = nullptr, *work_ = nullptr,
                               *ipiv_ = nullptr, *mat_ = nullptr, *rhs_ = nullptr, *tau_ = nullptr,
                               *rwork_ = nullptr, *u_ = nullptr, *vt_ = nullptr;
  int lwork_ = 0;
  std::unique_ptr<gpu_host::Module> module_;

  const gpu_host::DeviceBuffer* make(int64_t elements, size_t size = sizeof(T)) {
    return &scratch_.get(static_cast<size_t>(elements) * size);
  }
  int* info(int64_t b) { return at<int>(*status_, 2 + b); }
  int* later_info(int64_t b) { return at<int>(*status_, 2 + batch_ + b); }
  void need(SolverStatus rc, const char* routine) const {
    if (rc != 0)
      throw Error(ErrorKind::kDevice,
                  fmt::format("cuda: {}: {} failed with status {}", where_, routine, rc));
  }
  void launch(const std::string& symbol, std::vector<const gpu_host::DeviceBuffer*> args,
              int64_t work) {
    if (work > 0) device_.launch(*module_, symbol, args, work);
  }
  int ni(int64_t v) const { return static_cast<int>(v); }

  // Workspaces and the helper module, sized once for this call's shapes.
  void plan() {
    const LinalgCallShape shape{.op = op_,
                                .f64 = std::is_same_v<T, double>,
                                .m = m_,
                                .n = n_,
                                .batch = batch_,
                                .rhs_cols = c_,
                                .unit_diagonal = unit_};
    status_ints_ = shape.status_ints();
    status_ = make(status_ints_, sizeof(int));
    flags_ = make(2, sizeof(unsigned long long));
    mat_ = make(batch_ * m_ * n_);
    T* a = at<T>(*mat_);
    const int m = ni(m_), n = ni(n_), k = ni(k_);
    if (op_ == "Cholesky") {
      routine_ = "potrf";
      need(r_.potrf_size(solver_, kFillUpper, n, a, n, &lwork_), "potrf_bufferSize");
    } else if (op_ == "LU" || op_ == "Solve" || op_ == "Inverse" || op_ == "Det" ||
               op_ == "LogDet") {
      routine_ = "getrf";
      need(r_.getrf_size(solver_, m, n, a, m, &lwork_), "getrf_bufferSize");
      ipiv_ = make(batch_ * k_, sizeof(int));
      outputs_ = op_ == "LU" || op_ == "LogDet" ? 2 : 1;
      if (op_ == "Solve" && c_ > 1) rhs_ = make(b_numel_);
    } else if (op_ == "TriangularSolve") {
      routine_ = "trsm";
    } else if (op_ == "QR") {
      routine_ = "geqrf";
      outputs_ = 2;
      tau_ = make(batch_ * k_);
      int lq = 0;
      need(r_.geqrf_size(solver_, m, n, a, m, &lwork_), "geqrf_bufferSize");
      need(r_.orgqr_size(solver_, m, k, k, a, m, at<T>(*tau_), &lq), "orgqr_bufferSize");
      lwork_ = std::max(lwork_, lq);
    } else if (op_ == "SVD") {
      routine_ = "gesvd";
      outputs_ = 3;
      // gesvd takes rows >= cols: a wide or square a is factored as the column-major a^T.
      const bool tall = m_ > n_;
      need(r_.gesvd_size(solver_, tall ? m : n, tall ? n : m, &lwork_), "gesvd_bufferSize");
      rwork_ = make(k_);
      if (tall) u_ = make(m_ * k_), vt_ = make(k_ * n_);
    } else {
      routine_ = "syevd";
      outputs_ = 2;
      need(r_.syevd_size(solver_, kEigVectors, lower_ ? kFillUpper : kFillLower, n, a, n, a,
                         &lwork_),
           "syevd_bufferSize");
    }
    work_ = make(std::max(lwork_, 1));
    module_ = device_.build(linalg_helper_source(shape));
  }

  void copy(const gpu_host::DeviceBuffer& from, const gpu_host::DeviceBuffer& to, int64_t n) {
    device_.copy(from, to, static_cast<size_t>(n) * sizeof(T));
  }

  // potrf's upper factor of the column-major buffer is the row-major lower factor.
  void cholesky(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& l) {
    copy(a, l, batch_ * n_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.potrf(solver_, kFillUpper, ni(n_), at<T>(l, b * n_ * n_), ni(n_), at<T>(*work_),
                    lwork_, info(b)),
           "potrf");
    launch("zero_upper", {&l}, batch_ * n_ * n_);
  }

  void lu(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& lu,
          const gpu_host::DeviceBuffer& pivots) {
    launch("to_columns", {&a, mat_}, batch_ * m_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.getrf(solver_, ni(m_), ni(n_), at<T>(*mat_, b * m_ * n_), ni(m_), at<T>(*work_),
                    at<int>(*ipiv_, b * k_), info(b)),
           "getrf");
    launch("to_rows", {mat_, &lu}, batch_ * m_ * n_);
    launch("pivots", {ipiv_, &pivots}, batch_ * k_);
  }

  // The buffer read column-major is a^T, which getrf factors: enough for a^-1 and det a.
  void factor_transposed(const gpu_host::DeviceBuffer& a) {
    copy(a, *mat_, batch_ * n_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.getrf(solver_, ni(n_), ni(n_), at<T>(*mat_, b * n_ * n_), ni(n_), at<T>(*work_),
                    at<int>(*ipiv_, b * n_), info(b)),
           "getrf");
  }

  // a itself is factored (transposed to column-major first), as LAPACK's gesv factors it on
  // the cpu: the LU of a^T would find other (inexact) pivots, and an exactly singular a could
  // pass as a nearly singular one.
  void solve(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& rhs,
             const gpu_host::DeviceBuffer& x) {
    launch("to_columns", {&a, mat_}, batch_ * n_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.getrf(solver_, ni(n_), ni(n_), at<T>(*mat_, b * n_ * n_), ni(n_), at<T>(*work_),
                    at<int>(*ipiv_, b * n_), info(b)),
           "getrf");
    const gpu_host::DeviceBuffer* cols = &x;
    if (c_ > 1) {
      launch("rhs_to_columns", {&rhs, rhs_}, b_numel_);
      cols = rhs_;
    } else {
      copy(rhs, x, b_numel_);
    }
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.getrs(solver_, kNoTranspose, ni(n_), ni(c_), at<T>(*mat_, b * n_ * n_), ni(n_),
                    at<int>(*ipiv_, b * n_), at<T>(*cols, b * n_ * c_), ni(n_), later_info(b)),
           "getrs");
    if (c_ > 1) launch("rhs_to_rows", {rhs_, &x}, b_numel_);
  }

  // op(a) x = b as x^T op(a)^T = b^T: x's row-major buffer is x^T column-major, and a's is a^T,
  // so the triangle named flips and the transpose flag stays what the op says.
  void triangular_solve(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& rhs,
                        const gpu_host::DeviceBuffer& x) {
    if (!unit_) launch("zero_diagonal", {&a, status_}, batch_);
    copy(rhs, x, b_numel_);
    const T one = 1;
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.trsm(blas_, kSideRight, lower_ ? kFillUpper : kFillLower,
                   transpose_ ? kTranspose : kNoTranspose, unit_ ? kDiagUnit : kDiagNonUnit, ni(c_),
                   ni(n_), &one, at<T>(a, b * n_ * n_), ni(n_), at<T>(x, b * n_ * c_), ni(c_)),
           "trsm");
  }

  // getrs on the identity with the LU of a^T gives (a^T)^-1 column-major: a^-1 row-major.
  void inverse(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& inv) {
    factor_transposed(a);
    launch("identity", {&inv}, batch_ * n_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.getrs(solver_, kNoTranspose, ni(n_), ni(n_), at<T>(*mat_, b * n_ * n_), ni(n_),
                    at<int>(*ipiv_, b * n_), at<T>(inv, b * n_ * n_), ni(n_), later_info(b)),
           "getrs");
  }

  // det a = det a^T; a zero pivot (getrf's info > 0) is a determinant of 0, not an error.
  void determinant(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& det,
                   const gpu_host::DeviceBuffer* logabs) {
    factor_transposed(a);
    if (logabs)
      launch("logdet", {mat_, ipiv_, &det, logabs}, batch_);
    else
      launch("determinant", {mat_, ipiv_, &det}, batch_);
  }

  void qr(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& q,
          const gpu_host::DeviceBuffer& r) {
    launch("to_columns", {&a, mat_}, batch_ * m_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.geqrf(solver_, ni(m_), ni(n_), at<T>(*mat_, b * m_ * n_), ni(m_),
                    at<T>(*tau_, b * k_), at<T>(*work_), lwork_, info(b)),
           "geqrf");
    launch("upper_r", {mat_, &r}, batch_ * k_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.orgqr(solver_, ni(m_), ni(k_), ni(k_), at<T>(*mat_, b * m_ * n_), ni(m_),
                    at<T>(*tau_, b * k_), at<T>(*work_), lwork_, later_info(b)),
           "orgqr");
    launch("q_to_rows", {mat_, &q}, batch_ * m_ * k_);
  }

  void svd(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& u,
           const gpu_host::DeviceBuffer& s, const gpu_host::DeviceBuffer& vt) {
    if (m_ <= n_) {
      // a^T = U' S V'^T column-major: a = V' S U'^T, so V'^T read row-major is u and U' is vt.
      copy(a, *mat_, batch_ * m_ * n_);
      for (int64_t b = 0; b < batch_; ++b)
        need(r_.gesvd(solver_, 'S', 'S', ni(n_), ni(m_), at<T>(*mat_, b * m_ * n_), ni(n_),
                      at<T>(s, b * k_), at<T>(vt, b * k_ * n_), ni(n_), at<T>(u, b * m_ * k_),
                      ni(k_), at<T>(*work_), lwork_, at<T>(*rwork_), info(b)),
             "gesvd");
      return;
    }
    launch("to_columns", {&a, mat_}, batch_ * m_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.gesvd(solver_, 'S', 'S', ni(m_), ni(n_), at<T>(*mat_, b * m_ * n_), ni(m_),
                    at<T>(s, b * k_), at<T>(*u_, b * m_ * k_), ni(m_), at<T>(*vt_, b * k_ * n_),
                    ni(k_), at<T>(*work_), lwork_, at<T>(*rwork_), info(b)),
           "gesvd");
    launch("u_to_rows", {u_, &u}, batch_ * m_ * k_);
    launch("vt_to_rows", {vt_, &vt}, batch_ * k_ * n_);
  }

  // The row-major lower triangle is the column-major upper one; the eigenvectors come back as
  // the columns of a column-major matrix.
  void eigh(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& w,
            const gpu_host::DeviceBuffer& v) {
    copy(a, *mat_, batch_ * n_ * n_);
    for (int64_t b = 0; b < batch_; ++b)
      need(r_.syevd(solver_, kEigVectors, lower_ ? kFillUpper : kFillLower, ni(n_),
                    at<T>(*mat_, b * n_ * n_), ni(n_), at<T>(w, b * n_), at<T>(*work_), lwork_,
                    info(b)),
           "syevd");
    launch("to_rows", {mat_, &v}, batch_ * n_ * n_);
  }

  std::string matrix(int64_t b) const {
    return batch_ > 1 ? fmt::format("matrix {} of the batch", b) : std::string("the matrix");
  }

  [[noreturn]] void report(int64_t b, int info) const {
    if (op_ == "Cholesky")
      throw_user_error(fmt::format(
          "{}: {} is not positive definite: its leading minor of order {} is not positive "
          "(cuSOLVER potrf info = {}). Cholesky needs a symmetric positive definite matrix; use "
          "LU or Solve for a general one",
          where_, matrix(b), info, info));
    if (op_ == "TriangularSolve")
      throw_user_error(fmt::format("{}: {} is singular: its diagonal element {} is exactly zero",
                                   where_, matrix(b), info));
    if (op_ == "SVD" || op_ == "Eigh")
      throw_user_error(fmt::format(
          "{}: {} of {} did not converge (cuSOLVER {} info = {}); check the input's scaling "
          "(entries far apart in magnitude)",
          where_, op_ == "SVD" ? "the SVD" : "the eigenvalues", matrix(b), routine_, info));
    throw_user_error(fmt::format(
        "{}: {} is singular: U({},{}) is exactly zero after partial pivoting (cuSOLVER getrf "
        "info = {}); the system has no unique solution. Check the input for a zero or repeated "
        "row, or use a least-squares method",
        where_, matrix(b), info, info, info));
  }
};

}  // namespace

std::optional<Verdict> claim_dense_linalg(const NodeSignature& s) {
  if (!is_dense_op(s.op)) return std::nullopt;
  if (sdk::only_uses(s, {DType::kF32, DType::kF64, DType::kI32})) return Verdict::yes();
  return Verdict::no(fmt::format("cuda's cuSOLVER {} takes f32 or f64 matrices only", s.op));
}

std::string dense_linalg_vendor(const lir::CallKernel& call) {
  if (call.callee.rfind("native:", 0) != 0 || !is_dense_op(call.callee.substr(7))) return "";
  return call.callee == "native:TriangularSolve" ? "cuBLAS" : "cuSOLVER";
}

std::unique_ptr<gpu_host::VendorCall> plan_dense_linalg(CudaDevice& device,
                                                        const lir::CallKernel& call,
                                                        const lir::Program& program) {
  std::string why;
  const SolverApi* api = solver_api(&why);
  const std::string op = call.callee.substr(7);
  if (!api)
    throw Error(ErrorKind::kCompile,
                fmt::format("cuda: {}{} needs {}: {}", op,
                            call.loc.empty() ? "" : fmt::format(" ('{}')", call.loc),
                            dense_linalg_vendor(call), why));
  if (program.buffers.at(call.inputs.at(0)).dtype == DType::kF64)
    return std::make_unique<DenseCall<double>>(device, *api, call, program);
  return std::make_unique<DenseCall<float>>(device, *api, call, program);
}

}  // namespace rlx::cuda
