// The warp GEMV (plugins/cuda/src/warp_gemv.h) on the device: y = x W^T + bias + residual with
// x of 1, 3 and 8 rows at f32, f16 and bf16, k a whole number of weight vectors but not of a
// warp's step (so the last step leaves lanes idle), batched and not, against a double-precision
// loop over the same rounded inputs that rounds where the graph's dtype does (after the
// product, after each add). rlx_cuda_codegen_tests checks that products of this form take the
// GEMV.
// Skips without a CUDA device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "rlx/core/half.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

Tensor uniform(DType dt, std::vector<int64_t> shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(num_elements(shape)));
  for (float& x : v) x = u(rng);
  if (dt == DType::kF32) return Tensor::from<float>(dt, std::move(shape), v);
  Tensor t(dt, std::move(shape));
  auto* bits = static_cast<uint16_t*>(t.data());
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = dt == DType::kF16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
  return t;
}

// `x` rounded to `dt` as a store of the graph rounds it.
double rounded(DType dt, double x) {
  if (dt == DType::kF16) return f16_to_f32(f32_to_f16(static_cast<float>(x)));
  if (dt == DType::kBF16) return bf16_to_f32(f32_to_bf16(static_cast<float>(x)));
  return static_cast<float>(x);
}

void expect_gemv_matches(DType dt, int64_t batch, int64_t m, int64_t n, int64_t k, double tol) {
  const std::string t(dtype_name(dt));
  const std::string ir = fmt::format(
      R"(graph @t(%x: {0}[{1},{2},{4}], %w: {0}[{1},{3},{4}], %b: {0}[{3}], %r: {0}[{1},{2},{3}]) {{
  %y = dot_general(%x, %w) {{lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [2]}} : {0}[{1},{2},{3}]
  %bb = broadcast_in_dim(%b) {{dims = [2], shape = [{1}, {2}, {3}]}} : {0}[{1},{2},{3}]
  %z = add(%y, %bb) : {0}[{1},{2},{3}]
  %o = add(%z, %r) : {0}[{1},{2},{3}]
  return %o
}}
)",
      t, batch, m, n, k);
  const NamedTensors in{{"x", uniform(dt, {batch, m, k}, 1)},
                        {"w", uniform(dt, {batch, n, k}, 2)},
                        {"b", uniform(dt, {n}, 3)},
                        {"r", uniform(dt, {batch, m, n}, 4)}};
  const NamedTensors got = test::run_text(ir, in, test::target_named("cuda"));
  const std::vector<double> x = test::values(in.at("x")), w = test::values(in.at("w")),
                            b = test::values(in.at("b")), r = test::values(in.at("r"));
  std::vector<double> want(static_cast<size_t>(batch * m * n));
  for (int64_t bt = 0; bt < batch; ++bt)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double y = 0;
        for (int64_t p = 0; p < k; ++p) y += x[(bt * m + i) * k + p] * w[(bt * n + j) * k + p];
        const size_t at = static_cast<size_t>((bt * m + i) * n + j);
        want[at] = rounded(dt, rounded(dt, rounded(dt, y) + b[j]) + r[at]);
      }
  const std::vector<double> out = test::values(got.at("o"));
  ASSERT_EQ(out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(out[i], want[i], tol * std::max(1.0, std::abs(want[i])))
        << fmt::format("{} batch {} m {} n {} k {}: element {}", t, batch, m, n, k, i);
}

// The sums differ from the double loop by f32 rounding (k = 776: about 1e-6 relative); a 16-bit
// result may then round to the neighbouring value, one unit in its last place (f16 2^-10, bf16
// 2^-7 of the value), at each of the three roundings.
TEST(CudaWarpGemv, AgreesWithADoubleLoopAtEveryDtypeAndRowCount) {
  for (int64_t m : {1, 3, 8}) {
    expect_gemv_matches(DType::kF32, 1, m, 300, 776, 1e-5);
    expect_gemv_matches(DType::kF16, 1, m, 300, 776, 3e-3);
    expect_gemv_matches(DType::kBF16, 1, m, 300, 776, 2.5e-2);
  }
  expect_gemv_matches(DType::kF16, 3, 2, 65, 1024, 3e-3);
  expect_gemv_matches(DType::kF32, 2, 1, 33, 4096, 1e-5);
  // More steps than are fetched early, the last one ragged, and A too large to stage.
  expect_gemv_matches(DType::kF16, 1, 2, 70, 4360, 3e-3);
}

// The warp GEMV computes the norms whose only reader it is
// (test::kNormProductProgram: an RMSNorm through AMP's f16 convert, a LayerNorm with a bias, an
// f32 RMSNorm); the results agree with cpu as the unfused kernels do (the f16 product within its
// rounding). rlx_cuda_codegen_tests checks that the norms are taken.
TEST(CudaWarpGemv, NormalisesItsOperand) {
  std::mt19937 rng(29);
  NamedTensors in{{"x", test::uniform_f32(rng, {1, 1, 200}, 2.0f)},
                  {"g", test::uniform_f32(rng, {200}, 1.0f)},
                  {"b", test::uniform_f32(rng, {200}, 1.0f)},
                  {"w2", test::uniform_f32(rng, {40, 200}, 0.1f)},
                  {"w", uniform(DType::kF16, {72, 200}, 5)}};
  const NamedTensors want = test::run_text(test::kNormProductProgram, in, test::cpu_target());
  const NamedTensors got =
      test::run_text(test::kNormProductProgram, in, test::target_named("cuda"));
  test::expect_all_close({{"yf", want.at("yf")}}, {{"yf", got.at("yf")}}, 4e-3);
  for (const char* name : {"z", "v", "u", "r"})
    test::expect_all_close({{name, want.at(name)}}, {{name, got.at(name)}}, 1e-5);
}

}  // namespace
}  // namespace rlx
