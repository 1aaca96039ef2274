// What is particular to the gpu target: its status without an OpenCL driver and the emitted
// OpenCL C. What it shares with the other GPU-like targets (the cpu primitive suites run on gpu,
// refusals, index errors, mixed programs against the cpu, the model fixtures) is registered by
// gpu_test_main.cpp from sdk/testing.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rlx/core/safetensors.h"
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

// Runs `rlx run` of y = x + x on gpu with `env` (shell assignments) and returns what it wrote on
// stderr.
std::string rlx_run_stderr(const std::string& env) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("rlx-gpu-log-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "m.rlx")
      << "graph @g(%x: f32[3]) {\n  %y = add(%x, %x) : f32[3]\n  return %y\n}\n";
  write_safetensors(dir / "in.safetensors",
                    {{"x", Tensor::from<float>(DType::kF32, {3}, {1, 2, 3})}});
  const std::string cmd = fmt::format(
      "{} POCL_CACHE_DIR='{}' '{}' --plugin-path '{}' run '{}' -t gpu -i '{}' -o '{}' 2>'{}' "
      ">/dev/null",
      env, (dir / "pocl").string(), RLX_BINARY, RLX_TEST_PLUGIN_DIR, (dir / "m.rlx").string(),
      (dir / "in.safetensors").string(), (dir / "out.safetensors").string(),
      (dir / "err").string());
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
  std::string err = test::read_file(dir / "err");
  fs::remove_all(dir);
  // On PoCL the run says, as it should, that its device is software; that note is not a log.
  std::string kept;
  for (size_t at = 0; at < err.size();) {
    size_t end = std::min(err.find('\n', at), err.size() - 1) + 1;
    std::string line = err.substr(at, end - at);
    if (line.find("a software implementation on the CPU") == std::string::npos) kept += line;
    at = end;
  }
  return kept;
}

// The OpenCL compiler's warnings about generated code stay off the user's terminal (PoCL printed
// "47 warnings generated." on stderr itself); RLX_OPENCL_BUILD_LOG=1 shows every build's log.
TEST(GpuTarget, BuildLogsAreQuietUnlessAskedFor) {
  if (Verdict v = gpu()->can_execute(); !v.ok) GTEST_SKIP() << v.reason;
  EXPECT_EQ(rlx_run_stderr(""), "");
  const std::string shown = rlx_run_stderr("RLX_OPENCL_BUILD_LOG=1");
  EXPECT_NE(shown.find("rlx: gpu: OpenCL build log (-cl-std=CL1.2"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(" -w)"), std::string::npos) << shown;
}

TEST(GpuTarget, EmitsTheOpenClModuleItRuns) {
  test::Emitted e(test::kEmitProgram, gpu());
  ASSERT_EQ(e.artifacts().size(), 1u);
  EXPECT_EQ(e.artifacts()[0].path, "gpu_kernels.cl");
  const std::string cl = e.text("gpu_kernels.cl");
  EXPECT_NE(cl.find("#pragma OPENCL FP_CONTRACT OFF"), std::string::npos);
  // dot_general is a tiled product (sdk::render_matmul) that insists on 64-item work-groups.
  EXPECT_NE(cl.find("__kernel void __attribute__((reqd_work_group_size(64, 1, 1))) k0_dot_general("
                    "__global const float* restrict b0, __global const float* restrict b1, "
                    "__global float* restrict b2) {\n  __local float rlx_sa["),
            std::string::npos)
      << cl;
  EXPECT_NE(cl.find("barrier(CLK_LOCAL_MEM_FENCE);"), std::string::npos) << cl;
  EXPECT_NE(cl.find("__kernel void k1_gather("), std::string::npos) << cl;
  EXPECT_NE(cl.find("get_global_id(0)"), std::string::npos);
}

}  // namespace
}  // namespace rlx
