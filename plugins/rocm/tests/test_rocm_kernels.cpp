// The rocm target's kernels beyond its emit: the HIP dialect is the CUDA one but for its headers
// (one table, sdk/src/dialect_cuda.cpp), hipcc writes the same valid code object when hiprtc is
// absent, and the HIP source compiles with NVRTC through the HIP-on-CUDA header (what
// RLX_ROCM_VIA_CUDA=1 runs on an NVIDIA GPU; skipped where NVRTC is not installed).
#include <gtest/gtest.h>

#include <cstdlib>

#include "code_object_check.h"
#include "cuda_hip_library.h"
#include "hip_on_cuda.h"
#include "hipcc.h"
#include "module_plan.h"
#include "nvrtc.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/sdk/render.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

// The HIP source of `ir` as the rocm target writes it (compiled for rocm, planned with its
// kernel library), without a HIP compiler: the machine with NVRTC has no ROCm.
std::string hip_source(const std::string& ir) {
  Session s(test::target_named("rocm"));
  return gpu_host::plan_module(s.compile(parse_graph(ir, "test.rlx")).lir_for({}),
                               cuda_hip::hip_library())
      .source;
}

TEST(RocmKernels, TheHipDialectIsTheCudaDialectButForItsHeaders) {
  const sdk::Dialect &hip = sdk::hip_dialect(), &cuda = sdk::cuda_dialect();
  EXPECT_EQ(hip.name, "hip");
  EXPECT_EQ(hip.kernel_prefix, cuda.kernel_prefix);
  EXPECT_EQ(hip.group_id, cuda.group_id);
  EXPECT_EQ(hip.local_id, cuda.local_id);
  EXPECT_EQ(hip.barrier, cuda.barrier);
  EXPECT_EQ(hip.shared_array, cuda.shared_array);
  EXPECT_EQ(hip.fixed_group_size_attribute, cuda.fixed_group_size_attribute);
  EXPECT_EQ(hip.storage_type, cuda.storage_type);
  EXPECT_EQ(hip.math, cuda.math);
  // The device helpers follow the headers, word for word; CUDA then adds its 32-lane warp
  // reductions, which HIP leaves out (an AMD wavefront has 64 lanes), and the wait for the
  // kernels before it that Hopper's dependent launches need, which HIP has no form of.
  const std::string helpers = "#define RLX_DEVICE static __device__ __forceinline__";
  ASSERT_NE(hip.prelude.find(helpers), std::string::npos);
  const std::string hip_helpers = hip.prelude.substr(hip.prelude.find(helpers));
  const std::string cuda_helpers = cuda.prelude.substr(cuda.prelude.find(helpers));
  ASSERT_EQ(cuda_helpers.substr(0, hip_helpers.size()), hip_helpers);
  EXPECT_NE(cuda_helpers.find("rlx_warp_sum", hip_helpers.size()), std::string::npos);
  EXPECT_EQ(hip_helpers.find("__shfl"), std::string::npos);
  EXPECT_NE(cuda_helpers.find("griddepcontrol.wait", hip_helpers.size()), std::string::npos);
  EXPECT_EQ(cuda.kernel_entry, "rlx_await_producers();");
  EXPECT_TRUE(hip.kernel_entry.empty());
  EXPECT_TRUE(hip.simd_sum.empty() && hip.simd_max.empty());
  EXPECT_FALSE(cuda.simd_sum.empty());
  EXPECT_NE(hip.prelude.find("#include <hip/hip_runtime.h>"), std::string::npos);
  EXPECT_EQ(cuda.prelude.find("hip"), std::string::npos);
}

// hipcc --genco writes an offload bundle; the code object taken out of it is valid gfx90a code.
TEST(RocmKernels, HipccWritesTheSameKernelsAsAValidCodeObject) {
  std::string why;
  if (rocm::hipcc_path(&why).empty()) GTEST_SKIP() << why;
  if (test::llvm_tools_dir().empty()) GTEST_SKIP() << "no LLVM with the AMDGPU target here";
  const std::string hip = hip_source(test::kMixedProgram);
  const std::string object = rocm::hipcc_compile(hip, "gfx90a");
  EXPECT_EQ(object.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(test::check_code_object(object, "gfx90a", test::kernel_names(hip)), "");
}

// The HIP-on-CUDA header makes the HIP source CUDA C++ for NVRTC: it stands in for
// hip/hip_runtime.h and declares what that header brings (the fixed-width integer types).
TEST(RocmKernels, TheHipOnCudaHeaderStandsInForTheRuntimeHeader) {
  const cuda::CudaKernelLanguage l = rocm::hip_on_cuda_language();
  EXPECT_EQ(l.target, "rocm");
  EXPECT_EQ(&l.library->dialect(), &sdk::hip_dialect());
  ASSERT_EQ(l.headers.size(), 1u);
  EXPECT_EQ(l.headers[0].name, "hip/hip_runtime.h");
  for (const char* type : {"int8_t;", "uint16_t;", "int64_t;", "uint64_t;"})
    EXPECT_NE(l.headers[0].text.find(type), std::string::npos) << type;
  EXPECT_NE(l.headers[0].text.find("#define __HIP_PLATFORM_NVIDIA__ 1"), std::string::npos);
  EXPECT_STREQ(l.cache.folder, "rocm-on-cuda");
}

// Every kernel the suites write, as HIP, compiles with NVRTC through the header to an sm_90
// cubin: what the HIP-on-CUDA mode runs on the H200.
TEST(RocmKernels, EveryHipKernelCompilesWithNvrtcThroughTheHeader) {
  std::string why;
  if (!cuda::nvrtc_available(&why)) GTEST_SKIP() << why;
  const cuda::CudaKernelLanguage l = rocm::hip_on_cuda_language();
  for (const test::NamedProgram& p : test::every_kernel_programs()) {
    const std::string hip = hip_source(p.ir);
    const std::string cubin = cuda::nvrtc_compile(
        {hip, l.source_name, l.target, l.language, l.headers}, "sm_90", cuda::NvrtcOutput::kCubin);
    EXPECT_EQ(cubin.substr(0, 4),
              "\x7f"
              "ELF")
        << p.what;
  }
}

}  // namespace
}  // namespace rlx
