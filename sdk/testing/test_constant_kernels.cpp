// Kernels that read only a program's constants compute the same values on every run; the
// GPU-style targets run them once, when the program is loaded (gpu_host/once_launches.h), the
// cpu when it binds its constants. Registered into every executing target's suite.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::test {
namespace {

// An f16-stored weight widened and scaled by a second constant (what an f16 checkpoint run at
// --precision f32 does to its weights), read by two kernels of every run, one of them an output.
// (No product, so that targets without dot_general, the SDK's skeleton, run it too.) Three runs
// with new inputs: each gives that run's x times the constants' values, computed here; where
// RLX_PROFILE lists the kernels (first run left out), no later run launches the widening or the
// scaling.
void constant_kernels_agree_over_runs(const SuiteTarget& t) {
  // Past the compiler's constant folding (4096 elements), so the kernels stay in the program.
  constexpr int kK = 72, kN = 64;
  auto w_at = [](int i) { return (i % 17 - 8) * 0.25; };  // exact in f16
  auto s_at = [](int i) { return static_cast<double>(i % 5 + 1); };
  std::string w_text, s_text;
  for (int i = 0; i < kK * kN; ++i) {
    w_text += fmt::format("{}{}", i ? ", " : "", w_at(i));
    s_text += fmt::format("{}{}", i ? ", " : "", s_at(i));
  }
  const std::string ir = fmt::format(R"(graph @t(%x: f32[{0},{1}]) {{
  %w = constant() {{value = dense<f16[{0},{1}]: [{2}]>}} : f16[{0},{1}]
  %s = constant() {{value = dense<f32[{0},{1}]: [{3}]>}} : f32[{0},{1}]
  %wf = convert(%w) {{dtype = f32}} : f32[{0},{1}]
  %ws = mul(%wf, %s) : f32[{0},{1}]
  %y = mul(%x, %ws) : f32[{0},{1}]
  %n = neg(%ws) : f32[{0},{1}]
  return %y, %n
}}
)",
                                     kK, kN, w_text, s_text);
  Session session(target_named(t.name));
  ::setenv("RLX_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  {
    CompiledModel m = session.compile(parse_graph(ir));
    for (int run = 0; run < 3; ++run) {
      std::vector<float> x(kK * kN);
      for (int i = 0; i < kK * kN; ++i)
        x[static_cast<size_t>(i)] = static_cast<float>((run * 7 + i) % 11 - 5);
      NamedTensors out = m.run({{"x", f32({kK, kN}, x)}});
      // Every product is exact in f32 (quarters times small integers).
      std::vector<double> want(kK * kN), neg(kK * kN);
      for (int i = 0; i < kK * kN; ++i) {
        want[i] = x[i] * w_at(i) * s_at(i);
        neg[i] = -w_at(i) * s_at(i);
      }
      EXPECT_EQ(values(out.at("y")), want) << "run " << run;
      EXPECT_EQ(values(out.at("n")), neg) << "run " << run;
    }
  }
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("RLX_PROFILE");
  // Targets whose executor profiles its kernels (the GPU-style ones: gpu_host) say what ran.
  if (err.find("rlx profile (") == std::string::npos) return;
  EXPECT_NE(err.find("over runs 2 to 3"), std::string::npos) << err;
  // The widening's kernel (named for its ops: convert, or mul_convert with the scaling).
  EXPECT_EQ(err.find("convert"), std::string::npos)
      << "the widening was launched on a run after the first\n"
      << err;
}

void register_constant_kernel_tests(const SuiteTarget& t) {
  register_function_test(t, t.display + "Target", "KernelsOfConstantsRunOnceAndAgreeOverRuns",
                         [t] { constant_kernels_agree_over_runs(t); });
}

const bool kRegistered = add_suite_extension(&register_constant_kernel_tests);

}  // namespace
}  // namespace rlx::test
