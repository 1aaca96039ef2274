// Programs whose results a metal device must give like the cpu target: the C++ stand-in
// (test_msl_on_cpu.cpp) and, on a Mac, the Metal host (test_metal_host_syntax.cpp) run the same
// checks, so the stand-in proves on Linux what the device is asked on macOS.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx::metal::test {

// Fused elementwise kernels, reductions, dot_general with batch dims, gather, scatter-add, f16
// and i64 arithmetic; `tol` for the f32 results (the f16 one to 1e-3).
inline void expect_mixed_program_like_cpu(const std::shared_ptr<Target>& t, double tol) {
  NamedTensors in = rlx::test::mixed_program_inputs();
  NamedTensors want = rlx::test::run_text(rlx::test::kMixedProgram, in, rlx::test::cpu_target()),
               got = rlx::test::run_text(rlx::test::kMixedProgram, in, t);
  NamedTensors want_f16 = {{"hs", want.at("hs")}};
  want.erase("hs");
  rlx::test::expect_all_close(want, got, tol);
  rlx::test::expect_all_close(want_f16, got, 1e-3);
}

// Tiled products (cooperative kernels: threadgroup arrays and barriers) with fused epilogues, at
// sizes no tile divides, and an f16 result.
inline void expect_product_epilogues_like_cpu(const std::shared_ptr<Target>& t) {
  std::mt19937 rng(11);
  auto random = [&](std::vector<int64_t> shape) {
    return rlx::test::uniform_f32(rng, std::move(shape), 0.5f);
  };
  NamedTensors in{{"x", random({2, 37, 19})}, {"w", random({70, 19})},  {"b", random({70})},
                  {"r", random({2, 37, 70})}, {"w2", random({70, 19})}, {"w3", random({70, 19})}};
  NamedTensors want = rlx::test::run_text(rlx::test::kEpilogueProgram, in, rlx::test::cpu_target()),
               got = rlx::test::run_text(rlx::test::kEpilogueProgram, in, t);
  NamedTensors want_f16 = {{"h", want.at("h")}};
  want.erase("h");
  rlx::test::expect_all_close(want, got, 1e-5);
  rlx::test::expect_all_close(want_f16, got, 1e-3);
}

// A bad gather index is found by the kernel (the status buffer) and reported by the host.
inline void expect_bad_gather_reported(const std::shared_ptr<Target>& t) {
  Tensor i(DType::kI64, {3});
  auto* ip = static_cast<int64_t*>(i.data());
  ip[0] = 1, ip[1] = -1, ip[2] = 9;
  NamedTensors in{{"x", rlx::test::f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}, {"i", i}};
  try {
    rlx::test::run_text(
        "graph @t(%x: f32[4,2], %i: i64[3]) {\n  %g = gather(%x, %i) {axis = 0} : f32[3,2]\n"
        "  return %g\n}\n",
        in, t);
    FAIL() << "index 9 was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 9 (at position 2 of the indices) is out of range"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace rlx::metal::test
