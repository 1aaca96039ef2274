#include "hip_on_cuda.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "cuda_hip_library.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::rocm {

namespace {

// HIP's kernel language is CUDA's: the builtins (blockIdx, threadIdx, blockDim), qualifiers
// (__global__, __device__, __shared__, __forceinline__, __launch_bounds__ with one argument),
// __syncthreads, atomicCAS, the bit casts (__int_as_float, __float_as_uint, __uint_as_float) and
// the C math functions the kernels call have the same names and meaning in both, and NVRTC defines
// them itself. What HIP's runtime header adds for them is the platform and <stdint.h>: HIP's
// NVIDIA platform defines __HIP_PLATFORM_NVIDIA__ (and the deprecated __HIP_PLATFORM_NVCC__) and
// includes the CUDA runtime, which brings the fixed-width types; NVRTC has no <stdint.h>, so they
// are declared as the CUDA prelude declares them.
constexpr const char* kPlatform =
    R"(// hip/hip_runtime.h for HIP compiled by NVRTC (rlx rocm, RLX_ROCM_VIA_CUDA=1)
#pragma once
#define __HIP_PLATFORM_NVIDIA__ 1
#define __HIP_PLATFORM_NVCC__ 1
#define RLX_HIP_ON_CUDA 1
)";

}  // namespace

bool via_cuda_requested() {
  const char* v = std::getenv("RLX_ROCM_VIA_CUDA");
  if (!v || !*v || std::string_view(v) == "0") return false;
  if (std::string_view(v) == "1") return true;
  throw_user_error(fmt::format(
      "RLX_ROCM_VIA_CUDA='{}' is not 0 or 1: set it to 1 to run the rocm target's HIP kernels on "
      "an NVIDIA GPU through NVRTC (a proof of their semantics), or unset it",
      v));
}

std::string hip_on_cuda_header() {
  return std::string(kPlatform) + sdk::kNvrtcStdintTypes;
}

cuda::CudaKernelLanguage hip_on_cuda_language() {
  return {.target = "rocm",
          .library = &cuda_hip::hip_library(),
          .language = "HIP (on CUDA)",
          .source_name = "rlx_kernels.hip",
          .headers = {{"hip/hip_runtime.h", hip_on_cuda_header()}},
          .cache = {"rocm-on-cuda", ".cubin", ".hip"}};
}

}  // namespace rlx::rocm
