// The HIR ops the cuda target runs as library calls (gpu_host::VendorCall) rather than as kernels
// of its module: each family claims its ops, names the library that runs a call, and plans it.
// Dense linear algebra goes to cuSOLVER and cuBLAS (dense_linalg_call.h), Gaussian splatting to
// the target's own kernels (splat_call.h), collectives to NCCL (collective_call.h).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "cuda_device.h"
#include "rlx/core/target.h"

namespace rlx::cuda {

// The native claim for `s` when a family takes its op, nullopt otherwise.
std::optional<Verdict> claim_library_op(const NodeSignature& s);

// The library that runs `call` ("cuSOLVER"), or "" when the call is a kernel of the module.
std::string library_call_vendor(const lir::CallKernel& call);

// CudaKernelLanguage::plan_call: the call planned on `device`.
std::unique_ptr<gpu_host::VendorCall> plan_library_call(CudaDevice& device,
                                                        const lir::CallKernel& call,
                                                        const lir::Program& program);

}  // namespace rlx::cuda
