// Shader source -> SPIR-V with glslang, linked in (Debian's shared libshaderc crashes; glslang's
// static libraries do not). GLSL 4.50 for vulkan, HLSL (glslang's HLSL front end) for directx's
// kernels on Vulkan. Thread-safe: glslang is initialised once per process.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rlx::vulkan {

enum class ShaderLanguage { kGlsl, kHlsl };

// Compiles one compute shader with entry point `main` for Vulkan 1.1 (SPIR-V 1.3). Throws
// rlx::Error (kCompile) with glslang's log and the numbered source on failure.
std::vector<uint32_t> compile_to_spirv(const std::string& source, ShaderLanguage language,
                                       const std::string& what);

}  // namespace rlx::vulkan
