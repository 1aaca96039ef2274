// Gaussian splatting on the cuda target (docs/splatting.md): ProjectGaussians, TileBin,
// Rasterize and their backward ops claimed natively at f32 and f64 and run as library calls
// (gpu_host::VendorCall) of the target's own CUDA kernels (splat_cuda_kernels.h), with the cpu
// target's semantics: the same culling, tile lists in the same order, the same compositing.
// Errors the data decides (TileBin's capacity, tile lists that are not TileBin's) are found on
// the device and reported by check() after the run, as the cpu reports them during it.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "cuda_device.h"
#include "rlx/core/target.h"

namespace rlx::cuda {

// The claim for `s` when it is a splatting op, nullopt otherwise.
std::optional<Verdict> claim_splat(const NodeSignature& s);

// "rlx splat kernels" when `call` is one of the ops above, else "".
std::string splat_vendor(const lir::CallKernel& call);

// Plans `call` on `device`: builds its module and allocates its scratch memory.
std::unique_ptr<gpu_host::VendorCall> plan_splat(CudaDevice& device, const lir::CallKernel& call,
                                                 const lir::Program& program);

}  // namespace rlx::cuda
