// The vulkan target: LIR programs as GLSL 4.50 compute shaders (the SDK renderer's GLSL
// dialect), compiled to SPIR-V by glslang and run through the shared GPU host executor on any
// Vulkan 1.1 device (lavapipe on CPUs, GPU vendors' drivers). Like gpu it lowers no HIR op
// natively: every op takes its MIR decomposition, dot_general becomes a generated reduction
// kernel, gather and scatter come from the GLSL kernel library, while loops run on the host.
#include <fmt/format.h>

#include "device_executable.h"
#include "glsl_library.h"
#include "vulkan_legality.h"
#include "module_plan.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "spirv_compiler.h"
#include "target_plugin.h"
#include "vulkan_device.h"

namespace rlx::vulkan {

namespace {

class VulkanTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  VulkanTarget() : GpuLikeTargetPlugin("vulkan", "GLSL") {}

  Verdict accepts_primitive(const NodeSignature& s) const override {
    std::string why;
    return shader_legality("vulkan", "GLSL", s, VulkanDevice::probe(&why), &sdk::glsl_vulkan_dialect());
  }

  Verdict can_execute() const override {
    std::string why;
    bool found = VulkanDevice::probe(&why) != nullptr;
    return device_status(found, why);
  }

  std::optional<DeviceInfo> describe_device() const override {
    std::string why;
    const VulkanDeviceInfo* d = VulkanDevice::probe(&why);
    if (!d) return std::nullopt;
    const bool software = d->kind == "cpu";
    return DeviceInfo{d->name, d->kind,
                      software ? gpu_host::software_renderer_name(d->name, true, d->name) : "",
                      software};
  }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    return VulkanDevice::create("vulkan", glsl::glsl_library(), ShaderLanguage::kGlsl, why);
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api("the GLSL and SPIR-V"), program);
  }

  // The module exactly as compile() builds it: the GLSL of every kernel in one file (sections
  // start at `//@rlx-kernel <symbol>`), and each kernel's SPIR-V.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    return emit_shader_module(gpu_host::plan_module(program, glsl::glsl_library()).source, ShaderLanguage::kGlsl,
                              dir, "vulkan_kernels.comp", "glsl");
  }
};

}  // namespace

}  // namespace rlx::vulkan

RLX_DEFINE_TARGET_PLUGIN(rlx::vulkan::VulkanTarget)
