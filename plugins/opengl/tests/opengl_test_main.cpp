// The opengl suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what
// opengl is: GLSL 4.30, the same f64 limits as vulkan, compiled shaders cached by Mesa. Its own
// tests (8/16-bit integer refusals, emitted GLSL) are test_opengl_target.cpp.
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                  {.name = "opengl",
                                   .display = "OpenGl",
                                   .language = "GLSL",
                                   .device = "AnOpenGlContext",
                                   .cache_env = "MESA_SHADER_CACHE_DIR",
                                   .f64_single_only = rlx::test::kShaderF32OnlyOps,
                                   .packed_subword = true,
                                   .fixture_suite = "ShaderFixtures"});
}
