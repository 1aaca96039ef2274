// The vulkan suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what
// vulkan is: GLSL 4.50, exp/log/tanh/erf/sin/cos/pow/logistic at 32 bits only (refused at f64),
// compiled shaders cached by Mesa. Its own tests are test_vulkan_target.cpp.
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                  {.name = "vulkan",
                                   .display = "Vulkan",
                                   .language = "GLSL",
                                   .device = "AVulkanDevice",
                                   .cache_env = "MESA_SHADER_CACHE_DIR",
                                   .f64_single_only = rlx::test::kShaderF32OnlyOps,
                                   .fixture_suite = "ShaderFixtures"});
}
