// The kernel library of the two CUDA-family languages, CUDA C++ (the cuda target) and HIP (the
// rocm target): the SDK's CUDA or HIP dialect plus gather and scatter, which read through run-time
// indices and so are written here, not rendered (the index semantics are the IndexCallLibrary's,
// shared with OpenCL C and the shader languages). HIP's kernel language is CUDA's, so both
// libraries write the same kernel text and differ only in the dialect (the prelude's headers).
#pragma once
#include "index_call_library.h"

namespace rlx::cuda_hip {

class CudaHipKernelLibrary : public gpu_host::IndexCallLibrary {
 public:
  // `language` names it in compile errors ("CUDA C++", "HIP").
  CudaHipKernelLibrary(const sdk::Dialect& dialect, std::string language)
      : IndexCallLibrary(std::move(language)), dialect_(dialect) {}
  const sdk::Dialect& dialect() const override { return dialect_; }

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;

 private:
  const sdk::Dialect& dialect_;
};

// The libraries' one instances (they hold no state).
const CudaHipKernelLibrary& cuda_library();
const CudaHipKernelLibrary& hip_library();

}  // namespace rlx::cuda_hip
