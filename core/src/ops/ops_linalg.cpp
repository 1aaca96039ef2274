// Dense linear algebra HIR ops on stacks of matrices [..., m, n] in f32 or f64 (docs/ir.md,
// docs/scientific.md). Results follow NumPy/SciPy so they can be checked against them:
//   Cholesky(a[..., n, n]) -> l            lower factor, a = l l^T (a must be SPD)
//   LU(a[..., m, n]) -> lu, pivots i32     packed L\U as scipy.linalg.lu_factor, 0-based pivots
//   Solve(a[..., n, n], b[..., n, k] | b[n]) -> x     a x = b (numpy.linalg.solve)
//   TriangularSolve(a[..., n, n], b[..., n, k]) {lower, transpose, unit_diagonal} -> x
//   Inverse(a[..., n, n]) -> a^-1
//   Det(a[..., n, n]) -> d[...];  LogDet(a) -> sign[...], logabsdet[...] (numpy.linalg.slogdet)
//   QR(a[..., m, n]) -> q[..., m, k], r[..., k, n]        reduced, k = min(m, n)
//   SVD(a[..., m, n]) -> u[..., m, k], s[..., k], vt[..., k, n]   reduced, s descending
//   Eigh(a[..., n, n]) {lower} -> w[..., n] ascending, v[..., n, n] (columns are eigenvectors)
// A singular or indefinite input is reported by the kernel at run time (LAPACK's info), never
// returned as numbers. None has a MIR decomposition yet: a target lowers them natively or
// refuses them by name (the dispatch contract).
#include "ops/op_family.h"
#include "ops/op_helpers.h"

namespace rlx {
using namespace ops;

namespace {

bool real_float(DType d) {
  return d == DType::kF32 || d == DType::kF64;
}

// Checks a stack of matrices and returns its batch dims.
Shape matrix_stack(const std::string& op, const char* what, const TensorType& t, bool square) {
  if (!real_float(t.dtype)) fail("{}: {} must be f32 or f64, got {}", op, what, t.str());
  if (t.rank() < 2)
    fail("{}: {} must be a matrix or a stack of them [..., m, n], got {}", op, what, t.str());
  const Dim &m = t.shape[t.rank() - 2], &n = t.shape.back();
  if (square && !(m == n)) fail("{}: {} must be square, got {}", op, what, t.str());
  return Shape(t.shape.begin(), t.shape.end() - 2);
}

Shape with(Shape batch, std::initializer_list<Dim> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return batch;
}

// min(m, n) for the reduced factorizations; both must be known.
Dim min_dim(const std::string& op, const Dim& m, const Dim& n) {
  if (!m.is_static() || !n.is_static())
    fail("{}: the matrix dims must be static to size the reduced factors, got {} x {}", op, m.str(),
         n.str());
  return Dim(std::min(m.value, n.value));
}

std::vector<TensorType> infer_square_same(const std::vector<TensorType>& in, const Node& n) {
  matrix_stack(n.op, "a", in[0], true);
  return one(in[0]);
}

std::vector<TensorType> infer_lu(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], false);
  const Shape& s = in[0].shape;
  Dim k = min_dim(n.op, s[s.size() - 2], s.back());
  return {in[0], tt(DType::kI32, with(batch, {k}))};
}

// b is [..., n, k] with a's batch dims, or a vector [n] when a is one matrix (numpy 2 rules).
std::vector<TensorType> infer_solve(const std::vector<TensorType>& in, const Node& n) {
  const TensorType &a = in[0], &b = in[1];
  Shape batch = matrix_stack(n.op, "a", a, true);
  if (b.dtype != a.dtype)
    fail("{}: a is {} but b is {}; both must have one dtype", n.op, a.str(), b.str());
  const Dim& rows = a.shape.back();
  if (b.rank() == 1 && a.rank() == 2) {
    if (!(b.shape[0] == rows))
      fail("{}: a is {} but b is {}: b needs {} rows", n.op, a.str(), b.str(), rows.str());
    return one(b);
  }
  if (b.rank() != a.rank() || !(Shape(b.shape.begin(), b.shape.end() - 2) == batch) ||
      !(b.shape[b.rank() - 2] == rows))
    fail(
        "{}: a is {} so b must be [..., {}, k] with the same batch dims (or [{}] for one "
        "matrix), got {}",
        n.op, a.str(), rows.str(), rows.str(), b.str());
  return one(b);
}

std::vector<TensorType> infer_triangular_solve(const std::vector<TensorType>& in, const Node& n) {
  for (const char* key : {"lower", "transpose", "unit_diagonal"}) {
    int64_t v = n.attr_int(key, key == std::string("lower") ? 1 : 0);
    if (v != 0 && v != 1) fail("{}: {} must be 0 or 1, got {}", n.op, key, v);
  }
  return infer_solve(in, n);
}

std::vector<TensorType> infer_det(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], true);
  return one(tt(in[0].dtype, batch));
}

std::vector<TensorType> infer_logdet(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], true);
  return {tt(in[0].dtype, batch), tt(in[0].dtype, batch)};
}

std::vector<TensorType> infer_qr(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], false);
  const Shape& s = in[0].shape;
  const Dim &m = s[s.size() - 2], &c = s.back();
  Dim k = min_dim(n.op, m, c);
  DType d = in[0].dtype;
  return {tt(d, with(batch, {m, k})), tt(d, with(batch, {k, c}))};
}

std::vector<TensorType> infer_svd(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], false);
  const Shape& s = in[0].shape;
  const Dim &m = s[s.size() - 2], &c = s.back();
  Dim k = min_dim(n.op, m, c);
  DType d = in[0].dtype;
  return {tt(d, with(batch, {m, k})), tt(d, with(batch, {k})), tt(d, with(batch, {k, c}))};
}

std::vector<TensorType> infer_eigh(const std::vector<TensorType>& in, const Node& n) {
  Shape batch = matrix_stack(n.op, "a", in[0], true);
  int64_t lower = n.attr_int("lower", 1);
  if (lower != 0 && lower != 1) fail("{}: lower must be 0 or 1, got {}", n.op, lower);
  return {tt(in[0].dtype, with(batch, {in[0].shape.back()})), in[0]};
}

SampleFn matrix_sample(int arity, int64_t rows, int64_t cols) {
  return [=](DType d) -> std::optional<OpSample> {
    if (!real_float(d)) return std::nullopt;
    return sample_of(std::vector<TensorType>(arity, tt(d, {rows, cols})));
  };
}

OpDef linalg(const char* name, int arity, int outputs, InferFn infer, SampleFn sample,
             std::string summary) {
  OpDef d{name, OpLevel::kHir, OpClass::kOpaque, arity, arity, outputs};
  d.infer = std::move(infer);
  d.sample = std::move(sample);
  d.summary = std::move(summary) + "; f32/f64, native only (no MIR decomposition)";
  return d;
}

}  // namespace

void linalg_ops(OpFamily& f) {
  f.add(linalg("Cholesky", 1, 1, infer_square_same, matrix_sample(1, 3, 3),
               "lower Cholesky factor l of an SPD a = l l^T"));
  f.add(linalg("LU", 1, 2, infer_lu, matrix_sample(1, 3, 3),
               "LU with partial pivoting: packed l\\u and 0-based i32 row swaps (lu_factor)"));
  f.add(linalg("Solve", 2, 1, infer_solve, matrix_sample(2, 3, 3), "x with a x = b"));
  f.add(linalg("TriangularSolve", 2, 1, infer_triangular_solve, matrix_sample(2, 3, 3),
               "x with op(a) x = b, a triangular {lower, transpose, unit_diagonal}"));
  f.add(linalg("Inverse", 1, 1, infer_square_same, matrix_sample(1, 3, 3), "a^-1"));
  f.add(linalg("Det", 1, 1, infer_det, matrix_sample(1, 3, 3), "determinant"));
  f.add(linalg("LogDet", 1, 2, infer_logdet, matrix_sample(1, 3, 3),
               "sign and log|det| (numpy.linalg.slogdet)"));
  f.add(linalg("QR", 1, 2, infer_qr, matrix_sample(1, 4, 3), "reduced QR"));
  f.add(
      linalg("SVD", 1, 3, infer_svd, matrix_sample(1, 4, 3), "reduced SVD u, s (descending), vt"));
  f.add(linalg("Eigh", 1, 2, infer_eigh, matrix_sample(1, 3, 3),
               "eigenvalues (ascending) and eigenvectors of a symmetric a {lower}"));
}

}  // namespace rlx
