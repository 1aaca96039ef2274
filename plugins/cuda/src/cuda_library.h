// The CUDA C++ kernel library: the SDK's CUDA dialect plus gather and scatter, which read through
// run-time indices and so are written here, not rendered (the index semantics are the
// IndexCallLibrary's, shared with OpenCL C and the shader languages).
#pragma once
#include "index_call_library.h"

namespace rlx::cuda {

class CudaKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  CudaKernelLibrary() : IndexCallLibrary("CUDA C++") {}
  const sdk::Dialect& dialect() const override;
  // cuBLASLt where it loads and takes the product (cuda_matmul.h).
  std::string vendor_matmul(const sdk::MatmulShape& shape) const override;
  bool vendor_adds_bias_and_residual() const override { return true; }

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;
};

// The library's one instance (it holds no state).
const CudaKernelLibrary& cuda_library();

}  // namespace rlx::cuda
