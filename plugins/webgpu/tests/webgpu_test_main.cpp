// The webgpu suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what
// webgpu is: WGSL on wgpu-native (lavapipe here, through Vulkan), the f64 limits of the shader
// languages, bool/f16/bf16 packed in 32-bit words, compiled shaders cached by Mesa. Its own tests (refusals, packed elements, emitted
// WGSL, the ES module in headless Chromium) are test_webgpu_target.cpp.
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                  {.name = "webgpu",
                                   .display = "WebGpu",
                                   .language = "WGSL",
                                   .device = "AWebGpuAdapter",
                                   .cache_env = "MESA_SHADER_CACHE_DIR",
                                   .f64_single_only = rlx::test::kShaderF32OnlyOps,
                                   .packed_subword = true,
                                   .fixture_suite = "ShaderFixtures"});
}
