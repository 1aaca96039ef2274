// What is particular to the opengl target: its refusal of 8- and 16-bit integers, packed
// sub-word elements, the emitted GLSL. What it shares with the other GPU-like targets (the cpu
// primitive suites run on opengl, float ops at every dtype it accepts, f64 refusals, index
// errors, mixed programs, the model fixtures) is registered by opengl_test_main.cpp from
// tests/targets/common.
#include <gtest/gtest.h>

#include "test_support.h"

namespace rlx {
namespace {

using test::f32;
using test::run_text;
using test::values;

std::shared_ptr<Target> opengl() { return test::target_named("opengl"); }

TEST(OpenGlTarget, RefusesNarrowIntegersWithTheReason) {
  std::string msg = test::compile_error("graph @t(%x: i16[4], %y: i16[4]) {\n  %z = add(%x, %y) : i16[4]\n  return %z\n}\n",
                                        opengl());
  EXPECT_NE(msg.find("OpenGL 4.3 has no 8- or 16-bit integer types, so opengl cannot compute the i16 values of add; "
                     "use --target vulkan"),
            std::string::npos)
      << msg;
}

// bool and f16 elements share 32-bit words: neighbours written by different invocations keep
// each other's bytes (odd lengths, offsets inside a word).
TEST(OpenGlTarget, PackedBoolAndF16ElementsKeepTheirNeighbours) {
  const int64_t n = 4099;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37) % 101) - 50;
    y[i] = static_cast<float>((i * 53) % 97) - 48;
  }
  const char* ir = R"(graph @t(%x: f32[4099], %y: f32[4099]) {
  %p = lt(%x, %y) : bool[4099]
  %h = convert(%x) {dtype = f16} : f16[4099]
  %s = slice(%h) {limit = [4098], start = [1], strides = [1]} : f16[4097]
  %q = not(%p) : bool[4099]
  return %p, %q, %s
}
)";
  NamedTensors in = {{"x", f32({n}, x)}, {"y", f32({n}, y)}};
  auto want = run_text(ir, in, test::cpu_target());
  auto got = run_text(ir, in, opengl());
  for (const char* name : {"p", "q", "s"}) EXPECT_EQ(values(got.at(name)), values(want.at(name))) << name;
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
