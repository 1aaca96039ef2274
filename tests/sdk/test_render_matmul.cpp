// sdk::render_matmul as text: which kernel each product shape gets, that every cooperative
// dialect can write it, and the refusals. The kernels run in the target suites
// (sdk/testing/test_matmul.cpp); this pins the choices those runs cannot see.
#include <gtest/gtest.h>

#include <string>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::sdk {
namespace {

// C[m, n] = A[m, k] x W[n, k]^T (a Linear layer), or x B[k, n] when `linear` is false.
MatmulShape product(int64_t m, int64_t n, int64_t k, bool linear = true) {
  MatmulShape s;
  s.name = "k0_dot_general";
  s.m = m;
  s.n = n;
  s.k = k;
  s.a_m = k;
  s.a_k = 1;
  s.b_k = linear ? 1 : n;
  s.b_n = linear ? k : 1;
  return s;
}

TEST(RenderMatmul, TileGrowsWithTheProductAndSingleRowsAreGemv) {
  const Dialect& d = opencl_dialect();
  EXPECT_EQ(render_matmul(product(128, 384, 384), d).variant, "tiled 32x32");
  EXPECT_EQ(render_matmul(product(600, 900, 20), d).variant, "tiled 32x64");
  EXPECT_EQ(render_matmul(product(1100, 1000, 20), d).variant, "tiled 64x64");
  // A short M never takes 64-row tiles, however wide N is (an LM head over a few tokens).
  EXPECT_EQ(render_matmul(product(7, 151936, 1024), d).variant, "tiled 32x64");
  EXPECT_EQ(render_matmul(product(1, 3072, 1024), d).variant, "gemv");
  EXPECT_EQ(render_matmul(product(1, 3072, 1024, false), d).variant, "tiled 32x32");
  // A single column is the single row of the transposed product: GEMV when A is contiguous in k.
  EXPECT_EQ(render_matmul(product(3072, 1, 1024, false), d).variant, "gemv");
}

TEST(RenderMatmul, GroupsCoverEveryTileOfEveryBatch) {
  MatmulShape s = product(65, 129, 300);
  s.batch = 3;
  s.a_batch = 65 * 300;
  s.b_batch = 0;  // one weight for the whole batch
  EXPECT_EQ(render_matmul(s, opencl_dialect()).groups, 3 * 3 * 5);              // 32x32 tiles
  EXPECT_EQ(render_matmul(product(1, 129, 300), opencl_dialect()).groups, 33);  // 4 per group
}

TEST(RenderMatmul, EveryCooperativeDialectWritesItsOwnWords) {
  struct Case {
    const Dialect* dialect;
    const char* shared;
    const char* barrier;
  };
  const Case cases[] = {
      {&opencl_dialect(), "__local float rlx_sa[528];", "barrier(CLK_LOCAL_MEM_FENCE);"},
      {&glsl_vulkan_dialect(), "shared float rlx_sa[528];", "memoryBarrierShared(); barrier();"},
      {&glsl_opengl_dialect(), "shared float rlx_sa[528];", "memoryBarrierShared(); barrier();"},
      {&wgsl_dialect(), "var<workgroup> rlx_sa: array<f32, 528>;", "workgroupBarrier();"},
      {&hlsl_dialect(), "groupshared float rlx_sa[528];", "GroupMemoryBarrierWithGroupSync();"},
  };
  for (const Case& c : cases) {
    std::string src = render_matmul(product(65, 129, 300), *c.dialect).source;
    EXPECT_NE(src.find(c.shared), std::string::npos) << c.dialect->name << "\n" << src;
    EXPECT_NE(src.find(c.barrier), std::string::npos) << c.dialect->name;
    if (c.dialect->shared_at_module_scope) {  // inside the kernel's own section
      EXPECT_NE(src.find(std::string(kShaderKernelMarker) + "k0_dot_general\n" + c.shared),
                std::string::npos)
          << c.dialect->name << "\n"
          << src;
    }
  }
}

TEST(RenderMatmul, RefusesWhatItCannotWrite) {
  try {
    render_matmul(product(4, 4, 4), c_dialect());
    FAIL() << "the C dialect has no workgroups";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot render matrix product k0_dot_general in dialect c: the dialect has no "
              "cooperative (workgroup-shared) kernels");
  }
  MatmulShape s = product(4, 4, 4);
  s.c_dtype = DType::kF64;
  try {
    render_matmul(s, opencl_dialect());
    FAIL() << "f64 products keep the loop kernel";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("f64 is not f16, bf16 or f32"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx::sdk
