// The kernel library of the two CUDA-family languages, CUDA C++ (the cuda target) and HIP (the
// rocm target): the SDK's CUDA or HIP dialect plus gather and scatter, which read through run-time
// indices and so are written as text (gpu_host::CFamilyIndexLibrary's, in CUDA's words), not
// rendered. HIP's kernel language is CUDA's, so both
// libraries write the same kernel text and differ only in the dialect (the prelude's headers).
#pragma once
#include "c_family_index_library.h"

namespace rlx::cuda_hip {

class CudaHipKernelLibrary : public gpu_host::CFamilyIndexLibrary {
 public:
  // `language` names it in compile errors ("CUDA C++", "HIP").
  CudaHipKernelLibrary(const sdk::Dialect& dialect, std::string language);
  const sdk::Dialect& dialect() const override { return dialect_; }

 protected:
  std::string signature(const std::string& symbol, const std::vector<Param>& params) const override;
  std::string claim_status(int32_t slot) const override;

 private:
  const sdk::Dialect& dialect_;
};

// The libraries' one instances (they hold no state).
const CudaHipKernelLibrary& cuda_library();
const CudaHipKernelLibrary& hip_library();

}  // namespace rlx::cuda_hip
