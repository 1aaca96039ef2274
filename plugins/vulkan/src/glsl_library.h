// The GLSL kernel library of the vulkan target: the SDK's GLSL dialect plus gather and scatter,
// which read through run-time indices and so are written here, not rendered. Same index
// semantics and status-buffer protocol as the OpenCL C library (plugins/common/opencl_c).
#pragma once
#include "device_api.h"

namespace rlx::vulkan {

class GlslKernelLibrary final : public gpu_host::KernelLibrary {
 public:
  const sdk::Dialect& dialect() const override;
  bool has_call(const std::string& callee) const override;
  gpu_host::NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program,
                                     int32_t index, int32_t status_slot) const override;
};

const GlslKernelLibrary& glsl_library();

}  // namespace rlx::vulkan
