#include "cuda_hip_library.h"

#include <fmt/format.h>

namespace rlx::cuda_hip {

// The flat thread index in 64 bits, as the dialect composes it.
CudaHipKernelLibrary::CudaHipKernelLibrary(const sdk::Dialect& dialect, std::string language)
    : CFamilyIndexLibrary(std::move(language),
                          {"int64_t", "uint32_t", "uint64_t", "LL", "0xFFFFFFFFull",
                           "(int64_t)blockIdx.x * blockDim.x + threadIdx.x", "thread"}),
      dialect_(dialect) {}

std::string CudaHipKernelLibrary::signature(const std::string& symbol,
                                            const std::vector<Param>& params) const {
  std::string ps;
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    // status is read and written by many threads: not __restrict__.
    const char* restrict_kw = p.name == "status" ? "" : " __restrict__";
    ps += fmt::format("{}{}{}*{} {}", i ? ", " : "", p.written ? "" : "const ", p.type, restrict_kw,
                      p.name);
  }
  return fmt::format("extern \"C\" __global__ void {}({})", symbol, ps);
}

// atomicCAS makes exactly one thread write the slot.
std::string CudaHipKernelLibrary::claim_status(int32_t slot) const {
  return fmt::format("      if (atomicCAS(&status[{}], 0, 1) == 0) {{\n", slot);
}

const CudaHipKernelLibrary& cuda_library() {
  static const CudaHipKernelLibrary lib(sdk::cuda_dialect(), "CUDA C++");
  return lib;
}

const CudaHipKernelLibrary& hip_library() {
  static const CudaHipKernelLibrary lib(sdk::hip_dialect(), "HIP");
  return lib;
}

}  // namespace rlx::cuda_hip
