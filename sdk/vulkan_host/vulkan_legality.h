// What the vulkan target accepts on a Vulkan device: MIR primitives whose dtypes the device and
// GLSL can store and compute. A dtype the device lacks is refused with the missing feature named,
// never narrowed.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "rlx/core/target.h"
#include "rlx/sdk/render.h"
#include "spirv_compiler.h"

namespace rlx::vulkan {

struct VulkanDeviceInfo;

// `device` is null where no Vulkan device exists: then only what the language itself lacks is
// refused (emit needs no device). `dialect`, when given, refuses dtypes it has no storage type
// for (gpu_host::common_refusals).
Verdict shader_legality(const std::string& target, const std::string& language, const NodeSignature& s,
                        const VulkanDeviceInfo* device, const sdk::Dialect* dialect = nullptr);

// Writes `module` as `file` and each kernel's SPIR-V as spirv/<symbol>.spv under `dir`.
std::vector<Artifact> emit_shader_module(const std::string& module, ShaderLanguage language,
                                         const std::filesystem::path& dir, const std::string& file,
                                         const std::string& kind);

}  // namespace rlx::vulkan
