// What is particular to hello, beside the conformance suite: its own refusal, worded for a user,
// and the C it writes. The suite's helpers (test_support.h) load it through the registry.
#include <gtest/gtest.h>

#include "target_suite.h"
#include "test_support.h"

namespace {

TEST(Hello, RefusesLibraryCallsNamingTheNodeAndWhy) {
  std::string message = rlx::test::compile_error(rlx::test::kEmitProgram, rlx::test::target_named("hello"));
  EXPECT_NE(message.find("hello runs loop kernels only and dot_general is a library call"), std::string::npos)
      << message;
}

TEST(Hello, EmitsItsKernelsAsC) {
  rlx::test::Emitted emitted("graph @t(%x: f32[4]) {\n  %y = exp(%x) : f32[4]\n  return %y\n}\n",
                             rlx::test::target_named("hello"));
  ASSERT_EQ(emitted.artifacts().size(), 1u);
  EXPECT_NE(emitted.text("hello_kernels.c").find("exp"), std::string::npos);
}

}  // namespace
