// The directx target: LIR programs as HLSL compute shaders (the SDK renderer's HLSL dialect,
// Shader Model 6.2). `rlx compile --target directx -o DIR` writes the HLSL, one shader per kernel.
// On Windows the kernels run on Direct3D 12 through the shared GPU host executor (d3d12_device.h:
// DXIL from dxcompiler.dll); elsewhere Direct3D 12 does not exist and the target is codegen-only.
// On Linux its kernels are compiled by glslang's HLSL front end and run on Vulkan (lavapipe)
// through the vulkan target's device adapter (plugins/directx/tests).
#include <fmt/format.h>

#include "hlsl_library.h"
#include "module_plan.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "target_plugin.h"
#ifdef _WIN32
#include "d3d12_device.h"
#include "d3d12_legality.h"
#include "device_executable.h"
#endif

namespace rlx::directx {

namespace {

#ifndef _WIN32
constexpr const char* kWhy =
    "Direct3D 12 runs only on Windows; `rlx compile --target directx -o DIR` writes the HLSL (dxc -T "
    "cs_6_2 -E main -enable-16bit-types builds it)";
#endif

class DirectXTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  DirectXTarget() : GpuLikeTargetPlugin("directx", "HLSL") {}

#ifdef _WIN32
  // What HLSL can hold and compute, then what the D3D12 device's capabilities allow.
  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = hlsl_legality(s); !v.ok) return v;
    const D3D12Info* device = D3D12Device::probe(nullptr);
    return device ? d3d12_legality("directx", s, *device) : Verdict::yes();
  }

  Verdict can_execute() const override {
    std::string why;
    const D3D12Info* device = D3D12Device::probe(&why);
    return device_status(device != nullptr, why, device ? device->describe() : "");
  }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    return D3D12Device::create("directx", hlsl_library(), why);
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api("the HLSL"), program);
  }
#else
  // What HLSL can hold and compute; there is no D3D12 device to ask here.
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return hlsl_legality(s);
  }

  Verdict can_execute() const override { return Verdict::no(kWhy); }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_unsupported(fmt::format("directx is codegen-only: {}", kWhy));
  }
#endif

  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    return {write_module(dir, "directx_kernels.hlsl", "hlsl", gpu_host::plan_module(program, hlsl_library()).source)};
  }
};

}  // namespace

}  // namespace rlx::directx

RLX_DEFINE_TARGET_PLUGIN(rlx::directx::DirectXTarget)
