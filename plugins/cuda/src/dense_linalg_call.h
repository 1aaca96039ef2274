// Dense linear algebra on the cuda target (docs/scientific.md): the HIR ops Cholesky, LU, Solve,
// TriangularSolve, Inverse, Det, LogDet, QR, SVD and Eigh claimed natively at f32 and f64 and
// run as library calls (gpu_host::VendorCall) through cuSOLVER, TriangularSolve through cuBLAS's
// trsm, one routine per matrix of the batch on the device's stream. The results are the cpu's
// (LAPACK) definitions: the same packed LU and 0-based pivots, the same triangle conventions.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "cuda_device.h"
#include "rlx/core/target.h"

namespace rlx::cuda {

// The claim for `s` when it is a dense linear algebra op, nullopt otherwise.
std::optional<Verdict> claim_dense_linalg(const NodeSignature& s);

// "cuSOLVER" or "cuBLAS" when `call` is one of the ops above, else "".
std::string dense_linalg_vendor(const lir::CallKernel& call);

// Plans `call` on `device`: the library routines' workspaces, the small kernels around them
// (layout changes, pivots, determinants, input checks). Throws rlx::Error (kCompile) when
// cuSOLVER or cuBLAS cannot be loaded here.
std::unique_ptr<gpu_host::VendorCall> plan_dense_linalg(CudaDevice& device,
                                                        const lir::CallKernel& call,
                                                        const lir::Program& program);

}  // namespace rlx::cuda
