// The helper kernels around cuda's cuSOLVER calls (plugins/cuda/src/linalg_helper_kernels.h)
// compile with NVRTC for sm_90 for every op, f32 and f64, at shapes that are square, tall and
// wide; and a program of linear algebra emits its calls as cuSOLVER and cuBLAS calls. Needs
// NVRTC only (no device): the device runs them in rlx_cuda_tests' DenseLinalg tests.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "linalg_helper_kernels.h"
#include "nvrtc.h"
#include "test_support.h"

namespace rlx {
namespace {

TEST(CudaLinalgHelpers, EveryOpsHelperModuleCompilesToSm90) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const char* ops[] = {"Cholesky", "LU",  "Solve", "TriangularSolve", "Inverse", "Det", "LogDet",
                       "QR",       "SVD", "Eigh"};
  for (const char* op : ops)
    for (bool f64 : {false, true})
      for (auto [m, n] : {std::pair<int64_t, int64_t>{5, 5}, {7, 4}, {4, 7}}) {
        const bool square =
            std::string(op) != "LU" && std::string(op) != "QR" && std::string(op) != "SVD";
        if (square && m != n) continue;
        const bool rhs = std::string(op) == "Solve" || std::string(op) == "TriangularSolve";
        const cuda::LinalgCallShape shape{
            .op = op, .f64 = f64, .m = m, .n = n, .batch = 3, .rhs_cols = rhs ? 2 : 0};
        const std::string source = cuda::linalg_helper_source(shape);
        const std::string what = fmt::format("{} {} {}x{}", op, f64 ? "f64" : "f32", m, n);
        EXPECT_NE(source.find("void init("), std::string::npos) << what;
        const std::string cubin =
            cuda::nvrtc_compile({source, "linalg_helpers.cu"}, "sm_90", cuda::NvrtcOutput::kCubin);
        EXPECT_EQ(cubin.substr(0, 4),
                  "\x7f"
                  "ELF")
            << what;
      }
}

TEST(CudaLinalgHelpers, AProgramOfLinearAlgebraEmitsVendorCalls) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  test::Emitted e(R"(graph @t(%a: f64[2,4,4], %b: f64[2,4,3]) {
  %l = Cholesky(%a) : f64[2,4,4]
  %x = TriangularSolve(%l, %b) : f64[2,4,3]
  return %x
}
)",
                  test::target_named("cuda"));
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = e.text("cuda_kernels.cu");
  EXPECT_NE(cu.find("native:Cholesky through cuSOLVER"), std::string::npos) << cu;
  EXPECT_NE(cu.find("native:TriangularSolve through cuBLAS"), std::string::npos) << cu;
}

}  // namespace
}  // namespace rlx
