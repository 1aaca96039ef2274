// The GLSL kernel libraries of the vulkan (GLSL 4.50) and opengl (GLSL 4.30) targets: the SDK's
// GLSL dialect plus gather and scatter, which read through run-time indices and so are written
// here, not rendered. Same index semantics and status-buffer protocol as the OpenCL C library
// (plugins/common/opencl_c).
#pragma once
#include "device_api.h"

namespace rlx::vulkan {

class GlslKernelLibrary final : public gpu_host::KernelLibrary {
 public:
  explicit GlslKernelLibrary(bool opengl) : opengl_(opengl) {}
  const sdk::Dialect& dialect() const override;
  bool has_call(const std::string& callee) const override;
  gpu_host::NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program,
                                     int32_t index, int32_t status_slot) const override;

 private:
  bool opengl_;
};

const GlslKernelLibrary& glsl_library();         // GLSL 4.50 for Vulkan
const GlslKernelLibrary& glsl_opengl_library();  // GLSL 4.30 for OpenGL

}  // namespace rlx::vulkan
