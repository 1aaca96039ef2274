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

// An f16-stored weight widened and scaled by a second constant before an f32 product (what an
// f16 checkpoint run at --precision f32 does to every weight), and a constant-only value that is
// an output as well. Three runs with new inputs: each gives the products of that run's input,
// computed here in double from the constants' values; where RLX_PROFILE lists the kernels (first
// run left out), no later run launches the widening or the scaling.
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
  const std::string ir = fmt::format(R"(graph @t(%x: f32[2,{0}]) {{
  %w = constant() {{value = dense<f16[{0},{1}]: [{2}]>}} : f16[{0},{1}]
  %s = constant() {{value = dense<f32[{0},{1}]: [{3}]>}} : f32[{0},{1}]
  %wf = convert(%w) {{dtype = f32}} : f32[{0},{1}]
  %ws = mul(%wf, %s) : f32[{0},{1}]
  %y = dot_general(%x, %ws) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]}} : f32[2,{1}]
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
      std::vector<float> x(2 * kK);
      for (int i = 0; i < 2 * kK; ++i)
        x[static_cast<size_t>(i)] = static_cast<float>((run * 7 + i) % 11 - 5);
      NamedTensors out = m.run({{"x", f32({2, kK}, x)}});
      // Every product and sum is exact in f32 (quarters below 2^14).
      std::vector<double> want(2 * kN, 0.0), neg(kK * kN);
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < kN; ++c)
          for (int k = 0; k < kK; ++k)
            want[r * kN + c] += x[r * kK + k] * w_at(k * kN + c) * s_at(k * kN + c);
      for (int i = 0; i < kK * kN; ++i) neg[i] = -w_at(i) * s_at(i);
      EXPECT_EQ(values(out.at("y")), want) << "run " << run;
      EXPECT_EQ(values(out.at("n")), neg) << "run " << run;
    }
  }
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("RLX_PROFILE");
  // Targets whose executor profiles its kernels (the GPU-style ones: gpu_host) say what ran.
  if (err.find("rlx profile (") == std::string::npos) return;
  EXPECT_NE(err.find("over runs 2 to 3"), std::string::npos) << err;
  for (const char* kind : {"convert", "mul"})
    EXPECT_EQ(err.find(fmt::format("  {}", kind)), std::string::npos)
        << kind << " was launched on a run after the first\n"
        << err;
}

void register_constant_kernel_tests(const SuiteTarget& t) {
  register_function_test(t, t.display + "Target", "KernelsOfConstantsRunOnceAndAgreeOverRuns",
                         [t] { constant_kernels_agree_over_runs(t); });
}

const bool kRegistered = add_suite_extension(&register_constant_kernel_tests);

}  // namespace
}  // namespace rlx::test
