// The directx target: LIR programs as HLSL compute shaders (the SDK renderer's HLSL dialect,
// Shader Model 6.2). Direct3D 12 exists only on Windows and its host code is not written yet, so
// the target is codegen-only everywhere: `rlx compile --target directx -o DIR` writes the HLSL,
// one shader per kernel. Here its kernels are compiled by glslang's HLSL front end and run on
// Vulkan (lavapipe) through the vulkan target's device adapter (tests/targets/directx).
#include <fmt/format.h>

#include "hlsl_library.h"
#include "legality.h"
#include "module_plan.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "target_plugin.h"

namespace rlx::directx {

namespace {

constexpr const char* kWhy =
    "Direct3D 12 runs only on Windows and the directx executor is not written yet; `rlx compile "
    "--target directx -o DIR` writes the HLSL (dxc -T cs_6_2 -E main -enable-16bit-types builds it)";

class DirectXTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  DirectXTarget() : GpuLikeTargetPlugin("directx", "HLSL") {}

  // What HLSL can hold and compute; the D3D12 device is not known here (no executor).
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return vulkan::shader_legality("directx", "HLSL", s, nullptr);
  }

  Verdict can_execute() const override { return Verdict::no(kWhy); }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_user_error(fmt::format("directx is codegen-only: {}", kWhy));
  }

  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    return {write_module(dir, "directx_kernels.hlsl", "hlsl", gpu_host::plan_module(program, hlsl_library()).source)};
  }
};

}  // namespace

}  // namespace rlx::directx

RLX_DEFINE_TARGET_PLUGIN(rlx::directx::DirectXTarget)
