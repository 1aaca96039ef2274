#include "linalg_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "rlx/sdk/legality.h"

namespace rlx::cpu {

namespace {

const char* const kDense[] = {
    "Cholesky", "LU", "Solve", "TriangularSolve", "Inverse", "Det", "LogDet", "QR", "SVD", "Eigh"};
const char* const kSparse[] = {"SpMV", "SpMM", "SparseSolve", "CG"};

bool listed(const std::string& op, const char* const* begin, const char* const* end) {
  return std::any_of(begin, end, [&](const char* s) { return op == s; });
}

}  // namespace

std::optional<Verdict> claim_linalg_op(const NodeSignature& s) {
  if (listed(s.op, std::begin(kDense), std::end(kDense))) {
    if (sdk::only_uses(s, {DType::kF32, DType::kF64, DType::kI32})) return Verdict::yes();
    return Verdict::no(fmt::format("cpu's LAPACK {} takes f32 or f64 matrices only", s.op));
  }
  if (listed(s.op, std::begin(kSparse), std::end(kSparse))) {
    // SuiteSparse factors in double: f32 systems are widened exactly and x rounded once, which
    // the dispatch report shows.
    if (s.op == "SparseSolve" && s.inputs.size() > 2 && s.inputs[2].dtype == DType::kF32)
      return Verdict{true,
                     "SuiteSparse (UMFPACK or KLU) in f64: f32 values and b widened, x rounded "
                     "to f32"};
    // The decomposition's loop with each iteration fused into three passes (sparse_cg.cpp);
    // its dot products add in double.
    if (s.op == "CG")
      return Verdict{true,
                     "fused loop: SpMV with p.Ap, the updates with r.z and r.r; dot "
                     "products in f64"};
    return Verdict::yes();
  }
  return std::nullopt;
}

bool is_linalg_callee(const std::string& callee) {
  if (callee.rfind("native:", 0) != 0) return false;
  std::string op = callee.substr(7);
  return listed(op, std::begin(kDense), std::end(kDense)) ||
         listed(op, std::begin(kSparse), std::end(kSparse));
}

void run_linalg_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                       const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs) {
  const std::string op = k.callee.substr(7);
  const std::string where = k.loc.empty() ? op : fmt::format("{} ('{}')", op, k.loc);
  if (listed(op, std::begin(kSparse), std::end(kSparse)))
    return run_sparse_csr(k, in, out, ptrs, where);
  run_dense_linalg(k, in, out, ptrs, where);
}

}  // namespace rlx::cpu
