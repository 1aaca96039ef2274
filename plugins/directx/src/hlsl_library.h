// The HLSL kernel library of the directx target: the SDK's HLSL dialect plus gather and scatter,
// with the index semantics and status-buffer protocol of the OpenCL C and GLSL libraries.
#pragma once
#include "device_api.h"

namespace rlx::directx {

class HlslKernelLibrary final : public gpu_host::KernelLibrary {
 public:
  const sdk::Dialect& dialect() const override;
  bool has_call(const std::string& callee) const override;
  gpu_host::NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program,
                                     int32_t index, int32_t status_slot) const override;
};

const HlslKernelLibrary& hlsl_library();

}  // namespace rlx::directx
