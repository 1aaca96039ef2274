// The WGSL kernel library of the webgpu target: the SDK's WGSL dialect plus the text of gather
// and scatter (gpu_host::IndexCallLibrary has everything else: their index semantics and the
// status-buffer protocol shared with the GLSL, HLSL and OpenCL C libraries).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "index_call_library.h"

namespace rlx::webgpu {

class WgslKernelLibrary final : public gpu_host::IndexCallLibrary {
 public:
  WgslKernelLibrary() : IndexCallLibrary("WGSL") {}
  const sdk::Dialect& dialect() const override;
  bool computes_updates() const override { return true; }

 protected:
  std::string gather_source(const gpu_host::IndexCall& c) const override;
  std::string scatter_source(const gpu_host::IndexCall& c) const override;

 private:
  std::string head(const gpu_host::IndexCall& c, bool gather) const;
  std::string read(DType dt, const std::string& ptr, const std::string& i) const;
  std::string write(DType dt, const std::string& ptr, const std::string& i, const std::string& x) const;
};

const WgslKernelLibrary& wgsl_library();

// The module as it is compiled and emitted: `module` (plan_module's source) with the SDK's
// kWgslInt64Helpers at the start of each section that calls one (the prelude must compile on
// devices without i64, so they cannot live there).
std::string complete_wgsl_module(const std::string& module);

}  // namespace rlx::webgpu
