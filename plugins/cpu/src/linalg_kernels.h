// The cpu's native lowerings of the scientific HIR ops (core/src/ops/ops_linalg.cpp and
// ops_sparse.cpp): dense factorizations through LAPACKE (OpenBLAS's LAPACK), CSR products
// with oneTBB, sparse LU through SuiteSparse UMFPACK or KLU. LAPACK's info > 0 (a singular matrix, one
// that is not positive definite, an SVD that did not converge) and malformed CSR structure
// become user errors naming the node, never numbers.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

// The verdict for one of these ops, nullopt for any other op.
std::optional<Verdict> claim_linalg_op(const NodeSignature& s);
bool is_linalg_callee(const std::string& callee);
void run_linalg_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                       const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs);

// Kernels by family (dense_linalg.cpp, sparse_csr.cpp); `where` names the node in errors.
void run_dense_linalg(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                      const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs,
                      const std::string& where);
void run_sparse_csr(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                    const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs,
                    const std::string& where);

}  // namespace rlx::cpu
