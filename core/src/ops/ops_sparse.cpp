// Sparse matrices in CSR form (docs/scientific.md). A CSR matrix A [m, n] is three tensors:
// indptr (i32 or i64 [m + 1]), indices (the same integer dtype [nnz]) and values (f32 or f64
// [nnz]); row i holds values[indptr[i] .. indptr[i + 1]) at columns indices[...]. n is the
// row count of the dense operand. The structure's values (monotone indptr starting at 0 and
// ending at nnz, column indices in range and strictly increasing within a row) are checked by
// the kernel that reads them, which fails with the first offending position.
//   SpMV(indptr, indices, values, x[n]) -> y[m]           y = A x
//   SpMM(indptr, indices, values, x[n, k]) -> y[m, k]     y = A X
//   SparseSolve(indptr, indices, values, b[n] | b[n, k]) {solver} -> x     A x = b, A square
//     (sparse LU; solver = "umfpack", the default, or "klu": which factorization a target that
//     has both uses, since their speeds differ by matrix family)
// SpMV and SpMM decompose into MIR (ops_krylov.cpp); SparseSolve is native only.
#include "ops/op_family.h"
#include "ops/op_helpers.h"

namespace rlx {
using namespace ops;

namespace {

bool index_dtype(DType d) {
  return d == DType::kI32 || d == DType::kI64;
}

// Checks the three CSR tensors; returns the row count m.
Dim csr_rows(const std::string& op, const std::vector<TensorType>& in) {
  const TensorType &ptr = in[0], &idx = in[1], &val = in[2];
  if (!index_dtype(ptr.dtype) || ptr.rank() != 1)
    fail("{}: indptr must be i32 or i64 [rows + 1], got {}", op, ptr.str());
  if (idx.dtype != ptr.dtype || idx.rank() != 1)
    fail("{}: indices must be {} [nnz] like indptr, got {}", op, dtype_name(ptr.dtype), idx.str());
  if ((val.dtype != DType::kF32 && val.dtype != DType::kF64) || val.rank() != 1)
    fail("{}: values must be f32 or f64 [nnz], got {}", op, val.str());
  if (!(val.shape[0] == idx.shape[0]))
    fail("{}: values ({}) and indices ({}) must have one length, nnz", op, val.str(), idx.str());
  const Dim& p = ptr.shape[0];
  if (!p.is_static() || p.value < 1)
    fail("{}: indptr must have a static length rows + 1 >= 1, got {}", op, ptr.str());
  return Dim(p.value - 1);
}

std::vector<TensorType> infer_spmv(const std::vector<TensorType>& in, const Node& n) {
  Dim m = csr_rows(n.op, in);
  const TensorType& x = in[3];
  const bool matrix = n.op == "SpMM";
  if (x.dtype != in[2].dtype || x.rank() != (matrix ? 2 : 1))
    fail("{}: x must be {} {}, got {}", n.op, dtype_name(in[2].dtype), matrix ? "[n, k]" : "[n]",
         x.str());
  Shape out{m};
  if (matrix) out.push_back(x.shape[1]);
  return one(tt(x.dtype, out));
}

std::vector<TensorType> infer_sparse_solve(const std::vector<TensorType>& in, const Node& n) {
  Dim m = csr_rows(n.op, in);
  const std::string solver = n.attr_string("solver", "umfpack");
  if (solver != "umfpack" && solver != "klu")
    fail("{}: solver must be \"umfpack\" or \"klu\", got \"{}\"", n.op, solver);
  const TensorType& b = in[3];
  if (b.dtype != in[2].dtype || b.rank() < 1 || b.rank() > 2 || !(b.shape[0] == m))
    fail("{}: A is {} x {} (square), so b must be {} [{}] or [{}, k], got {}", n.op, m.str(),
         m.str(), dtype_name(in[2].dtype), m.str(), m.str(), b.str());
  return one(b);
}

// A 2 x 2 identity in CSR, for the legality tables.
SampleFn csr_sample(bool matrix) {
  return [=](DType d) -> std::optional<OpSample> {
    if (d != DType::kF32 && d != DType::kF64) return std::nullopt;
    Shape x = matrix ? Shape{2, 3} : Shape{2};
    return sample_of({tt(DType::kI64, {3}), tt(DType::kI64, {2}), tt(d, {2}), tt(d, x)});
  };
}

OpDef sparse(const char* name, InferFn infer, SampleFn sample, std::string summary) {
  OpDef d{name, OpLevel::kHir, OpClass::kOpaque, 4, 4, 1};
  d.infer = std::move(infer);
  d.sample = std::move(sample);
  d.summary = std::move(summary) + " (CSR indptr, indices, values)";
  return d;
}

}  // namespace

void sparse_ops(OpFamily& f) {
  OpDef spmv = sparse("SpMV", infer_spmv, csr_sample(false), "y = A x");
  OpDef spmm = sparse("SpMM", infer_spmv, csr_sample(true), "Y = A X");
  spmv.decompose = spmm.decompose = spmv_decomposition();  // gather, multiply, scatter-add
  f.add(std::move(spmv));
  f.add(std::move(spmm));
  f.add(sparse("SparseSolve", infer_sparse_solve, csr_sample(false),
               "x with A x = b by sparse LU; native only (no MIR decomposition)"));
}

}  // namespace rlx
