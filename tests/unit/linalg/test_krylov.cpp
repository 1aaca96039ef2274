// CG and PCG (Jacobi) on cpu in f64, both natively (the fused loop) and through the shared-IR
// lowering every other target takes (a while loop of SpMV, dot and axpy; a cpu that refuses CG
// natively runs it), against the residual computed here in double; and in f32 on the gpu (PoCL)
// and vulkan (lavapipe) targets, where SpMV takes its own MIR decomposition, against the cpu's
// solution.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "linalg_test_util.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"

namespace rlx::test {
namespace {

// `index` is the dtype of indptr and indices: i64, or i32 for targets without 64-bit integers.
std::string cg_graph(DType d, const CsrMatrix& a, const std::string& attrs,
                     DType index = DType::kI64) {
  return fmt::format(
      "graph @t(%p: {5}[{0}], %i: {5}[{1}], %v: {2}[{1}], %b: {2}[{3}]) {{\n"
      "  %x, %it, %res = CG(%p, %i, %v, %b) {{{4}}} : {2}[{3}], i32[], {2}[]\n"
      "  return %x, %it, %res\n}}\n",
      a.rows + 1, a.nnz(), dtype_name(d), a.rows, attrs, dtype_name(index));
}

Tensor narrowed_to_i32(const Tensor& t) {
  Tensor out(DType::kI32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    out.as<int32_t>()[i] = static_cast<int32_t>(t.as<int64_t>()[i]);
  return out;
}

NamedTensors feed(const CsrMatrix& a, DType d, const Mat& b, DType index = DType::kI64) {
  auto t = a.tensors(d);
  if (index == DType::kI32) t[0] = narrowed_to_i32(t[0]), t[1] = narrowed_to_i32(t[1]);
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

// The cpu target with CG's native claim refused: dispatch then takes CG's decomposition, the
// path of every other target, which the cpu runs as a while loop of its kernels.
std::shared_ptr<Target> cpu_without_native_cg() {
  return cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    if (native && s.op == "CG") return "the test takes CG's decomposition";
    return std::nullopt;
  });
}

// Each test runs on both paths.
class KrylovOnCpu : public ::testing::TestWithParam<bool> {
 protected:
  bool native() const { return GetParam(); }
  std::shared_ptr<Target> target() const {
    return native() ? cpu_target() : cpu_without_native_cg();
  }
};

TEST_P(KrylovOnCpu, CgConvergesInF64) {
  CsrMatrix a = poisson_2d(16);  // 256 unknowns
  Mat b = random_matrix(a.rows, 1, 41);
  Session session(target());
  CompiledModel m =
      session.compile(parse_graph(cg_graph(DType::kF64, a, "tol = 1e-10, max_iter = 500")));
  EXPECT_EQ(m.report().entries.at(0).path,
            native() ? LoweringPath::kNative : LoweringPath::kSharedIr);
  NamedTensors out = m.run(feed(a, DType::kF64, b));
  const double res = values(out.at("res"))[0];
  EXPECT_LE(res, 1e-10);
  EXPECT_LT(relative_residual(a, values(out.at("x")), b), 1e-9);
  const double it = values(out.at("it"))[0];
  EXPECT_GT(it, 10);
  EXPECT_LT(it, 100);  // CG on a 16 x 16 grid needs about 50
}

TEST_P(KrylovOnCpu, JacobiPreconditioningCutsIterationsOnABadlyScaledMatrix) {
  CsrMatrix a = scaled_poisson(12);
  Mat b = random_matrix(a.rows, 1, 42);
  auto run = [&](const char* pre) {
    return run_text(
        cg_graph(DType::kF64, a,
                 fmt::format("tol = 1e-9, max_iter = 2000, preconditioner = \"{}\"", pre)),
        feed(a, DType::kF64, b), target());
  };
  NamedTensors plain = run("none"), pcg = run("jacobi");
  EXPECT_LT(relative_residual(a, values(pcg.at("x")), b), 1e-8);
  EXPECT_LT(values(pcg.at("it"))[0] * 2, values(plain.at("it"))[0])
      << "pcg " << values(pcg.at("it"))[0] << " cg " << values(plain.at("it"))[0];
}

TEST_P(KrylovOnCpu, AnIterationLimitIsReportedNotHidden) {
  CsrMatrix a = poisson_2d(16);
  Mat b = random_matrix(a.rows, 1, 43);
  auto out = run_text(cg_graph(DType::kF64, a, "tol = 1e-12, max_iter = 5"),
                      feed(a, DType::kF64, b), target());
  EXPECT_EQ(values(out.at("it"))[0], 5);
  EXPECT_GT(values(out.at("res"))[0], 1e-3);  // far from converged, and it says so
}

INSTANTIATE_TEST_SUITE_P(NativeAndSharedIr, KrylovOnCpu, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("Native") : std::string("SharedIr");
                         });

// The two paths run the same recurrence and differ only in rounding (the native loop adds its
// dot products in double, in chunks), so on a well-conditioned problem they take the same
// iterations to the same solution, in f64 and in f32, on matrices with several row chunks
// (4096 rows each) and an odd tail.
TEST(Krylov, NativeAndSharedIrLoopsAgree) {
  CsrMatrix a = poisson_2d(97);  // 9409 unknowns: three chunks, the last one partial
  Mat b = random_matrix(a.rows, 1, 45);
  for (DType d : {DType::kF64, DType::kF32})
    for (const char* pre : {"none", "jacobi"}) {
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(d), pre));
      const std::string g =
          cg_graph(d, a,
                   fmt::format("tol = {}, max_iter = 3000, preconditioner = \"{}\"",
                               d == DType::kF64 ? 1e-10 : 1e-5, pre));
      NamedTensors native = run_text(g, feed(a, d, b), cpu_target());
      NamedTensors shared = run_text(g, feed(a, d, b), cpu_without_native_cg());
      EXPECT_NEAR(values(native.at("it"))[0], values(shared.at("it"))[0], 2);
      EXPECT_LT(max_abs_diff(values(native.at("x")), values(shared.at("x"))),
                d == DType::kF64 ? 1e-9 : 2e-3);
      EXPECT_LT(relative_residual(a, values(native.at("x")), b), d == DType::kF64 ? 1e-9 : 1e-4);
    }
}

// The same solve on the GPU-style targets in f32 (PoCL, lavapipe, llvmpipe and wgpu-native on
// lavapipe here), where SpMV takes its MIR decomposition and the host runs the loop; webgpu has
// no 64-bit integers, so its CSR indices are i32.
class KrylovOn : public ::testing::TestWithParam<const char*> {};

TEST_P(KrylovOn, F32CgMatchesCpu) {
  std::shared_ptr<Target> target;
  try {
    target = target_named(GetParam());
  } catch (const std::exception& e) {
    GTEST_SKIP() << GetParam() << " cannot run here: " << e.what();
  }
  // Without its device a target also judges legality without the device's features.
  if (Verdict v = target->can_execute(); !v.ok)
    GTEST_SKIP() << GetParam() << " cannot run here: " << v.reason;
  CsrMatrix a = poisson_2d(5);
  Mat b = random_matrix(a.rows, 1, 44);
  NamedTensors got;
  const DType index = std::string(GetParam()) == "webgpu" ? DType::kI32 : DType::kI64;
  try {
    got = run_text(
        cg_graph(DType::kF32, a, "tol = 1e-5, max_iter = 200, preconditioner = \"jacobi\"", index),
        feed(a, DType::kF32, b, index), target);
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

INSTANTIATE_TEST_SUITE_P(GpuStyle, KrylovOn,
                         ::testing::Values("gpu", "vulkan", "opengl", "webgpu"));

}  // namespace
}  // namespace rlx::test
