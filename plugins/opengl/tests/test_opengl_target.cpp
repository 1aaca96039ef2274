// What is particular to the opengl target: its refusal of 8- and 16-bit integers and the emitted
// GLSL. What it shares with the other GPU-like targets (the cpu primitive suites run on opengl,
// float ops at every dtype it accepts, f64 refusals, index errors, packed sub-word elements,
// mixed programs, the model fixtures) is registered by opengl_test_main.cpp from
// sdk/testing.
#include <gtest/gtest.h>

#include "test_support.h"

namespace rlx {
namespace {

std::shared_ptr<Target> opengl() { return test::target_named("opengl"); }

TEST(OpenGlTarget, RefusesNarrowIntegersWithTheReason) {
  std::string msg = test::compile_error("graph @t(%x: i16[4], %y: i16[4]) {\n  %z = add(%x, %y) : i16[4]\n  return %z\n}\n",
                                        opengl());
  EXPECT_NE(msg.find("OpenGL 4.3 has no 8- or 16-bit integer types, so opengl cannot compute the i16 values of add; "
                     "use --target vulkan"),
            std::string::npos)
      << msg;
}

// The emitted GLSL is GLSL 4.30 with plain bindings (no Vulkan descriptor sets).
TEST(OpenGlTarget, EmitsGlsl430) {
  test::Emitted e("graph @t(%x: f32[4]) {\n  %y = exp(%x) : f32[4]\n  return %y\n}\n", opengl());
  ASSERT_EQ(e.artifacts().size(), 1u);
  const std::string text = e.text("opengl_kernels.comp");
  EXPECT_EQ(text.rfind("#version 430", 0), 0u);
  EXPECT_NE(text.find("layout(std430, binding = 1) restrict buffer B1 { float b1[]; };"), std::string::npos) << text;
}

}  // namespace
}  // namespace rlx
