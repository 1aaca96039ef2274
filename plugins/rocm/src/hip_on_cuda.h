// The rocm target's HIP-on-CUDA mode (RLX_ROCM_VIA_CUDA=1): the HIP source the target generates,
// compiled by NVRTC and run on an NVIDIA GPU through the CUDA driver (sdk/cuda_host), to prove on
// NVIDIA hardware what the HIP kernels compute. It proves their semantics, not AMD performance
// (docs/targets.md, docs/decisions.md).
//
// The HIP source includes hip/hip_runtime.h (sdk::hip_dialect()); under NVRTC that name is given
// in memory as kHipOnCudaHeader, which plays the part of HIP's own NVIDIA platform header
// (hip/nvidia_detail/nvidia_hip_runtime.h: HIP's names onto CUDA's) for what the kernels use.
#pragma once
#include <string>

#include "cuda_device.h"

namespace rlx::rocm {

// Whether RLX_ROCM_VIA_CUDA asks for the mode ("1"); throws rlx::Error (kUser) for a value other
// than "0", "1" or unset.
bool via_cuda_requested();

// hip/hip_runtime.h for NVRTC.
std::string hip_on_cuda_header();

// What the CUDA device compiles and runs in this mode: the HIP kernel library with the header.
cuda::CudaKernelLanguage hip_on_cuda_language();

}  // namespace rlx::rocm
