#include "spirv_compiler.h"

#include <fmt/format.h>
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>

#include <mutex>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::vulkan {

namespace {

// glslang's process state is set up once and never torn down: finalising it at exit could race
// with another library still compiling.
void init_glslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

std::string numbered(const std::string& source) {
  std::istringstream in(source);
  std::string out, line;
  for (int n = 1; std::getline(in, line); ++n) out += fmt::format("{:4} {}\n", n, line);
  if (out.size() > 12000) out = out.substr(0, 12000) + "...\n";
  return out;
}

}  // namespace


std::vector<uint32_t> compile_to_spirv(const std::string& source, ShaderLanguage language,
                                       const std::string& what) {
  init_glslang();
  const bool hlsl = language == ShaderLanguage::kHlsl;
  glslang::TShader shader(EShLangCompute);
  const char* text = source.c_str();
  shader.setStrings(&text, 1);
  shader.setEnvInput(hlsl ? glslang::EShSourceHlsl : glslang::EShSourceGlsl, EShLangCompute,
                     glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_1);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_3);
  shader.setEntryPoint("main");
  if (hlsl) shader.setPreamble("#define RLX_GLSLANG 1\n");  // the HLSL prelude leaves out int64_t
  auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  if (hlsl)
    messages = static_cast<EShMessages>(messages | EShMsgReadHlsl | EShMsgHlslEnable16BitTypes |
                                        EShMsgHlslOffsets);
  if (!shader.parse(GetDefaultResources(), hlsl ? 500 : 450, false, messages))
    throw Error(ErrorKind::kCompile,
                fmt::format("glslang could not compile the generated {} of {}:\n{}\n{}",
                            hlsl ? "HLSL" : "GLSL", what, shader.getInfoLog(), numbered(source)));
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages))
    throw Error(ErrorKind::kCompile, fmt::format("glslang could not link the {} of {}:\n{}",
                                                 hlsl ? "HLSL" : "GLSL", what,
                                                 program.getInfoLog()));
  std::vector<uint32_t> spirv;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  options.disableOptimizer = true;  // the driver optimises; spirv-opt is not linked in
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  std::string log = logger.getAllMessages();
  if (spirv.empty())
    throw Error(ErrorKind::kCompile, fmt::format("glslang produced no SPIR-V for {}: {}", what, log));
  return spirv;
}

}  // namespace rlx::vulkan
