// What is particular to the gpu target: its status without an OpenCL driver and the emitted
// OpenCL C. What it shares with the other GPU-like targets (the cpu primitive suites run on gpu,
// refusals, index errors, mixed programs against the cpu, the model fixtures) is registered by
// gpu_test_main.cpp from sdk/testing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

std::shared_ptr<Target> gpu() { return test::target_named("gpu"); }

// With the ICD loader pointed at an empty folder (ocl-icd reads OCL_ICD_VENDORS), there is no
// platform: the plugin still loads, lists itself as codegen-only and says what to install.
TEST(GpuTarget, WithoutAnOpenClDriverItIsCodegenOnlyAndSaysWhy) {
  std::filesystem::path empty = std::filesystem::temp_directory_path() / fmt::format("rlx-no-icd-{}", getpid());
  std::filesystem::create_directories(empty);
  std::string cmd = fmt::format("OCL_ICD_VENDORS='{}' '{}' --plugin-path '{}' --list-targets 2>&1", empty.string(),
                                RLX_BINARY, RLX_TEST_PLUGIN_DIR);
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    pclose(pipe);
  }
  std::filesystem::remove_all(empty);
  std::string line;
  for (std::stringstream lines(out); std::getline(lines, line);)
    if (line.rfind("  gpu ", 0) == 0) break;
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << out;
  EXPECT_NE(line.find("no OpenCL platform is installed (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)); "
                      "install a driver: pocl-opencl-icd for CPUs, or the GPU vendor's OpenCL ICD"),
            std::string::npos)
      << out;
}

TEST(GpuTarget, EmitsTheOpenClModuleItRuns) {
  test::Emitted e(test::kEmitProgram, gpu());
  ASSERT_EQ(e.artifacts().size(), 1u);
  EXPECT_EQ(e.artifacts()[0].path, "gpu_kernels.cl");
  const std::string cl = e.text("gpu_kernels.cl");
  EXPECT_NE(cl.find("#pragma OPENCL FP_CONTRACT OFF"), std::string::npos);
  EXPECT_NE(cl.find("__kernel void k0_dot_general(__global const float* restrict b0, "
                    "__global const float* restrict b1, __global float* restrict b2)"),
            std::string::npos)
      << cl;
  EXPECT_NE(cl.find("__kernel void k1_gather("), std::string::npos) << cl;
  EXPECT_NE(cl.find("get_global_id(0)"), std::string::npos);
}

}  // namespace
}  // namespace rlx
