// The OpenCL C kernel library shared by the two targets that speak OpenCL C (gpu runs it through
// an OpenCL driver, oneapi compiles it to SPIR-V): the SDK's OpenCL dialect plus gather and
// scatter, which read through run-time indices and so are written here, not rendered.
#pragma once
#include "device_api.h"

namespace rlx::opencl_c {

class OpenClKernelLibrary final : public gpu_host::KernelLibrary {
 public:
  const sdk::Dialect& dialect() const override;
  bool has_call(const std::string& callee) const override;
  gpu_host::NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program,
                                     int32_t index, int32_t status_slot) const override;
};

// The library's one instance (it holds no state).
const OpenClKernelLibrary& opencl_library();

}  // namespace rlx::opencl_c
