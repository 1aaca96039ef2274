// The OpenCL C kernel library shared by the two targets that speak OpenCL C (gpu runs it through
// an OpenCL driver, oneapi compiles it to SPIR-V): the SDK's OpenCL dialect plus gather and
// scatter, which read through run-time indices and so are written here, not rendered.
#pragma once
#include "index_call_library.h"

namespace rlx::opencl_c {

class OpenClKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  OpenClKernelLibrary() : IndexCallLibrary("OpenCL C") {}
  const sdk::Dialect& dialect() const override;

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;
};

// The library's one instance (it holds no state).
const OpenClKernelLibrary& opencl_library();

}  // namespace rlx::opencl_c
