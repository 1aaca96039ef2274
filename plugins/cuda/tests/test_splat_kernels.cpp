// The splatting kernels of the cuda target (plugins/cuda/src/splat_cuda_kernels.h) compile with
// NVRTC for sm_90 for every op, f32 and f64, at several scenes (colour channels, images that
// are not whole tiles, TileBin capacities), and a render with its gradients emits all five ops
// as calls to them. Needs NVRTC only (no device): rlx_cuda_tests' CudaSplat tests run them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "nvrtc.h"
#include "rlx/core/autodiff.h"
#include "rlx/core/runtime.h"
#include "rlx/core/splat.h"
#include "splat_graph_inputs.h"
#include "splat_cuda_kernels.h"
#include "test_support.h"

namespace rlx {
namespace {

const char* const kOps[] = {"ProjectGaussians", "ProjectGaussiansBackward", "TileBin", "Rasterize",
                            "RasterizeBackward"};

// The kernels splat_call.cpp launches for each op.
std::vector<std::string> kernels_of(const std::string& op) {
  if (op == "ProjectGaussians") return {"project"};
  if (op == "ProjectGaussiansBackward") return {"project_backward"};
  if (op == "TileBin") return {"bin_count", "bin_scan", "bin_fill", "bin_sort", "bin_tail"};
  if (op == "Rasterize") return {"rasterize"};
  return {"rasterize_backward"};
}

TEST(CudaSplatKernels, EveryOpsModuleCompilesToSm90) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  struct Scene {
    int64_t n, width, height, channels, capacity;
  };
  // 1080p-sized with a large capacity, a scene smaller than a tile, one colour channel, many.
  const Scene scenes[] = {
      {100000, 1920, 1080, 3, 40000000}, {5, 7, 3, 1, 0}, {300, 75, 53, 16, 5000}};
  for (const char* op : kOps)
    for (bool f64 : {false, true})
      for (const Scene& sc : scenes) {
        const cuda::SplatCallShape shape{.op = op,
                                         .f64 = f64,
                                         .gaussians = sc.n,
                                         .width = sc.width,
                                         .height = sc.height,
                                         .near = 0.01,
                                         .channels = sc.channels,
                                         .capacity = sc.capacity};
        const std::string source = cuda::splat_kernel_source(shape);
        const std::string what =
            fmt::format("{} {} {}x{} N={}", op, f64 ? "f64" : "f32", sc.width, sc.height, sc.n);
        for (const std::string& k : kernels_of(op))
          EXPECT_NE(source.find(fmt::format(" {}(", k)), std::string::npos) << what << ": " << k;
        const std::string cubin =
            cuda::nvrtc_compile({source, "splat_kernels.cu"}, "sm_90", cuda::NvrtcOutput::kCubin);
        EXPECT_EQ(cubin.substr(0, 4),
                  "\x7f"
                  "ELF")
            << what;
      }
}

// The near plane reaches the kernel as its bits, whatever the value.
TEST(CudaSplatKernels, TheNearPlaneIsExactInTheText) {
  cuda::SplatCallShape shape{.op = "ProjectGaussians", .gaussians = 4, .width = 16, .height = 16};
  shape.near = 0.1;
  EXPECT_NE(cuda::splat_kernel_source(shape).find("0x3fb999999999999a"), std::string::npos);
}

TEST(CudaSplatKernels, ARenderAndItsGradientsEmitCallsToTheSplatKernels) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  Graph g;
  GraphBuilder b(g);
  const int64_t n = 8;
  const DType dt = DType::kF64;
  const SplatValues v = splat_test::splat_inputs(b, n, dt);
  SplatCamera cam;
  cam.width = 40, cam.height = 24;
  const SplatRender r = append_splat_render(b, v, cam);
  const ValueId loss = b.reduce(r.image, {0, 1, 2}, ReduceKind::kSum);
  b.output(loss);
  for (ValueId grad : append_gradients(g, loss, {v.means, v.opacities})) b.output(grad);

  setenv("RLX_CUDA_ARCH", "sm_90", 1);
  std::shared_ptr<Target> cuda = test::target_named("cuda");
  Session session(cuda);
  test::TempDir dir;
  cuda->emit(session.compile(g).lir_for({}), dir.path());
  unsetenv("RLX_CUDA_ARCH");
  const std::string cu = test::read_file(dir.path() / "cuda_kernels.cu");
  for (const char* op : kOps)
    EXPECT_NE(cu.find(fmt::format("native:{}", op)), std::string::npos) << op << "\n" << cu;
  EXPECT_NE(cu.find("through rlx splat kernels"), std::string::npos) << cu;
}

}  // namespace
}  // namespace rlx
