// CG and PCG (Jacobi) through their shared-IR lowering (a while loop of SpMV, dot and axpy):
// on cpu in f64 against the residual computed here in double, and in f32 on the gpu (PoCL) and
// vulkan (lavapipe) targets, where SpMV takes its own MIR decomposition, against the cpu's
// solution.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "linalg_test_util.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"

namespace rlx::test {
namespace {

std::string cg_graph(DType d, const CsrMatrix& a, const std::string& attrs) {
  return fmt::format(
      "graph @t(%p: i64[{0}], %i: i64[{1}], %v: {2}[{1}], %b: {2}[{3}]) {{\n"
      "  %x, %it, %res = CG(%p, %i, %v, %b) {{{4}}} : {2}[{3}], i32[], {2}[]\n"
      "  return %x, %it, %res\n}}\n",
      a.rows + 1, a.nnz(), dtype_name(d), a.rows, attrs);
}

NamedTensors feed(const CsrMatrix& a, DType d, const Mat& b) {
  auto t = a.tensors(d);
  return {{"p", t[0]}, {"i", t[1]}, {"v", t[2]}, {"b", tensor(d, {a.rows}, b)}};
}

// Poisson with its rows and columns scaled by s_i = 1 + 50 (i mod 7): still SPD, badly scaled,
// which Jacobi undoes.
CsrMatrix scaled_poisson(int64_t g) {
  CsrMatrix a = poisson_2d(g);
  auto s = [](int64_t i) { return 1.0 + 50.0 * static_cast<double>(i % 7); };
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) a.values[k] *= s(i) * s(a.indices[k]);
  return a;
}

TEST(Krylov, CgOnCpuConvergesInF64) {
  CsrMatrix a = poisson_2d(16);  // 256 unknowns
  Mat b = random_matrix(a.rows, 1, 41);
  Session session(cpu_target());
  CompiledModel m =
      session.compile(parse_graph(cg_graph(DType::kF64, a, "tol = 1e-10, max_iter = 500")));
  EXPECT_EQ(m.report().entries.at(0).path, LoweringPath::kSharedIr);
  NamedTensors out = m.run(feed(a, DType::kF64, b));
  const double res = values(out.at("res"))[0];
  EXPECT_LE(res, 1e-10);
  EXPECT_LT(relative_residual(a, values(out.at("x")), b), 1e-9);
  const double it = values(out.at("it"))[0];
  EXPECT_GT(it, 10);
  EXPECT_LT(it, 100);  // CG on a 16 x 16 grid needs about 50
}

TEST(Krylov, JacobiPreconditioningCutsIterationsOnABadlyScaledMatrix) {
  CsrMatrix a = scaled_poisson(12);
  Mat b = random_matrix(a.rows, 1, 42);
  auto run = [&](const char* pre) {
    return run_text(
        cg_graph(DType::kF64, a,
                 fmt::format("tol = 1e-9, max_iter = 2000, preconditioner = \"{}\"", pre)),
        feed(a, DType::kF64, b), cpu_target());
  };
  NamedTensors plain = run("none"), pcg = run("jacobi");
  EXPECT_LT(relative_residual(a, values(pcg.at("x")), b), 1e-8);
  EXPECT_LT(values(pcg.at("it"))[0] * 2, values(plain.at("it"))[0])
      << "pcg " << values(pcg.at("it"))[0] << " cg " << values(plain.at("it"))[0];
}

TEST(Krylov, AnIterationLimitIsReportedNotHidden) {
  CsrMatrix a = poisson_2d(16);
  Mat b = random_matrix(a.rows, 1, 43);
  auto out = run_text(cg_graph(DType::kF64, a, "tol = 1e-12, max_iter = 5"),
                      feed(a, DType::kF64, b), cpu_target());
  EXPECT_EQ(values(out.at("it"))[0], 5);
  EXPECT_GT(values(out.at("res"))[0], 1e-3);  // far from converged, and it says so
}

// The same solve on the GPU-style targets in f32 (PoCL and lavapipe here), where SpMV takes its
// MIR decomposition and the host runs the loop; opengl and webgpu take the same path (the
// Poisson example runs them).
class KrylovOn : public ::testing::TestWithParam<const char*> {};

TEST_P(KrylovOn, F32CgMatchesCpu) {
  std::shared_ptr<Target> target;
  try {
    target = target_named(GetParam());
  } catch (const std::exception& e) {
    GTEST_SKIP() << GetParam() << " cannot run here: " << e.what();
  }
  CsrMatrix a = poisson_2d(5);
  Mat b = random_matrix(a.rows, 1, 44);
  NamedTensors got;
  try {
    got = run_text(
        cg_graph(DType::kF32, a, "tol = 1e-5, max_iter = 200, preconditioner = \"jacobi\""),
        feed(a, DType::kF32, b), target);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported || e.kind() == ErrorKind::kDevice)
      GTEST_SKIP() << GetParam() << " cannot run it here: " << e.what();
    throw;
  }
  auto cpu = run_text(cg_graph(DType::kF64, a, "tol = 1e-12, max_iter = 200"),
                      feed(a, DType::kF64, b), cpu_target());
  EXPECT_LT(values(got.at("res"))[0], 1e-5);
  EXPECT_LT(max_abs_diff(values(got.at("x")), values(cpu.at("x"))), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(GpuStyle, KrylovOn, ::testing::Values("gpu", "vulkan"));

}  // namespace
}  // namespace rlx::test
