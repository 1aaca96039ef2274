// What is particular to the rocm target: its status without an AMD GPU (and in the HIP-on-CUDA
// mode without an NVIDIA one), the HIP source and code object it emits, the architecture
// override, and that every kernel the suites write compiles to a gfx90a code object that the LLVM
// tools accept as gfx90a machine code. These need hiprtc (or hipcc) and LLVM, not a device: CI
// runs them on machines without a GPU. What rocm shares with the other GPU-like targets is
// registered by rocm_test_main.cpp from sdk/testing and skips without a device.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string_view>

#include "code_object_check.h"
#include "rocm_compile.h"
#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

std::shared_ptr<Target> rocm() {
  return test::target_named("rocm");
}

// The HIP compiler is found the way the plugin finds it (its own code, compiled in).
#define REQUIRE_HIP_TOOLS()                                                                      \
  if (std::string why; rocm::hip_compiler(&why).empty()) GTEST_SKIP() << why;                    \
  if (test::llvm_tools_dir().empty())                                                            \
  GTEST_SKIP() << "no LLVM with the AMDGPU target here (llvm-mc, llvm-objdump): Debian's hipcc " \
                  "brings llvm-15"

std::string rlx_output(const std::string& env) {
  return test::run_command(fmt::format("env {} '{}' --plugin-path '{}' --list-targets", env,
                                       RLX_BINARY, RLX_TEST_PLUGIN_DIR))
      .text;
}

std::string rocm_line(const std::string& listing) {
  std::string line;
  for (std::stringstream lines(listing); std::getline(lines, line);)
    if (line.rfind("  rocm ", 0) == 0) return line;
  return "";
}

// Emits `ir` for rocm at `arch` and checks the code object against the source's kernels.
void expect_compiles_to(const std::string& ir, std::string_view what, const std::string& arch) {
  setenv("RLX_ROCM_ARCH", arch.c_str(), 1);
  test::Emitted e(ir, rocm());
  unsetenv("RLX_ROCM_ARCH");
  ASSERT_EQ(e.artifacts().size(), 2u) << what;
  const std::string hip = e.text("rocm_kernels.hip");
  const std::vector<std::string> kernels = test::kernel_names(hip);
  EXPECT_FALSE(kernels.empty()) << what << "\n" << hip;
  EXPECT_EQ(
      test::check_code_object(e.text(fmt::format("rocm_kernels.{}.hsaco", arch)), arch, kernels),
      "")
      << what;
}

// Without an AMD GPU the plugin still loads, lists itself as codegen-only and gives the HIP
// runtime's own reason (or that the runtime is not installed).
TEST(RocmCodegen, WithoutAnAmdGpuItIsCodegenOnlyAndSaysWhy) {
  if (::access("/dev/kfd", F_OK) == 0) GTEST_SKIP() << "this machine has an AMD GPU (/dev/kfd)";
  if (::access(RLX_BINARY, X_OK) != 0)
    GTEST_SKIP() << "the rlx this test was built with is not on this machine (" << RLX_BINARY
                 << "): the test program was moved to another one";
  unsetenv("RLX_ROCM_VIA_CUDA");
  const std::string out = rlx_output("-u RLX_ROCM_VIA_CUDA");
  const std::string line = rocm_line(out);
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << out;
  const bool runtime = line.find("libamdhip64.so not found") == std::string::npos;
  if (runtime)  // ROCm 5.2's answer, through hipGetErrorName
    EXPECT_NE(line.find("no AMD GPU (hipGetDeviceCount: hipErrorNoDevice (100"), std::string::npos)
        << out;
  Verdict v = rocm()->can_execute();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find(runtime ? "no AMD GPU" : "libamdhip64.so not found"), std::string::npos)
      << v.reason;
}

// RLX_ROCM_VIA_CUDA=1 asks for an NVIDIA GPU instead; without a CUDA driver it says so.
TEST(RocmCodegen, TheHipOnCudaModeWithoutACudaDriverSaysWhy) {
  if (::access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this machine has an NVIDIA GPU";
  const std::string out = rlx_output("RLX_ROCM_VIA_CUDA=1");
  const std::string line = rocm_line(out);
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << out;
  EXPECT_NE(line.find("RLX_ROCM_VIA_CUDA=1 runs HIP on a CUDA device, and there is none: "
                      "libcuda.so.1 not found"),
            std::string::npos)
      << out;
  EXPECT_NE(
      rocm_line(rlx_output("RLX_ROCM_VIA_CUDA=yes")).find("RLX_ROCM_VIA_CUDA='yes' is not 0 or 1"),
      std::string::npos)
      << rlx_output("RLX_ROCM_VIA_CUDA=yes");
}

// The module is the one compile() builds, as HIP and a gfx90a code object.
TEST(RocmCodegen, EmitsHipSourceAndAGfx90aCodeObject) {
  REQUIRE_HIP_TOOLS();
  unsetenv("RLX_ROCM_ARCH");
  test::Emitted e(test::kEmitProgram, rocm());
  ASSERT_EQ(e.artifacts().size(), 2u);
  EXPECT_EQ(e.artifacts()[0].path, "rocm_kernels.hip");
  EXPECT_EQ(e.artifacts()[1].path, "rocm_kernels.gfx90a.hsaco");
  const std::string hip = e.text("rocm_kernels.hip");
  // hipcc gets the runtime header; hiprtc, which has it built in, the 8- and 16-bit types.
  EXPECT_EQ(hip.rfind("#ifdef __HIPCC_RTC__\ntypedef signed char int8_t;", 0), 0u) << hip;
  EXPECT_NE(hip.find("#else\n#include <hip/hip_runtime.h>\n#endif\n"), std::string::npos) << hip;
  // dot_general is the SDK's tiled product, written for blocks of 64 threads.
  EXPECT_NE(hip.find("extern \"C\" __global__ void __launch_bounds__(64) k0_dot_general("
                     "const float* __restrict__ b0, const float* __restrict__ b1, float* "
                     "__restrict__ b2) {\n  __shared__ float rlx_sa["),
            std::string::npos)
      << hip;
  EXPECT_NE(hip.find("extern \"C\" __global__ void k1_gather("), std::string::npos) << hip;
  EXPECT_EQ(test::kernel_names(hip).size(), 3u) << hip;
  EXPECT_EQ(test::check_code_object(e.text("rocm_kernels.gfx90a.hsaco"), "gfx90a",
                                    test::kernel_names(hip)),
            "");
}

// RLX_ROCM_ARCH picks another architecture (RDNA 2 here), and a malformed one is refused by name.
TEST(RocmCodegen, RlxRocmArchChoosesTheArchitecture) {
  REQUIRE_HIP_TOOLS();
  expect_compiles_to(test::kEmitProgram, "kEmitProgram", "gfx1030");
  setenv("RLX_ROCM_ARCH", "mi250", 1);
  std::string error;
  try {
    test::Emitted e(test::kEmitProgram, rocm());
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  unsetenv("RLX_ROCM_ARCH");
  EXPECT_NE(error.find("RLX_ROCM_ARCH='mi250' is not an AMD GPU architecture"), std::string::npos)
      << error;
  // A well-formed name no compiler knows is the compiler's error (ROCm 5.2's hiprtc would crash
  // on it: the plugin asks comgr first).
  setenv("RLX_ROCM_ARCH", "gfx999", 1);
  error.clear();
  try {
    test::Emitted e(test::kEmitProgram, rocm());
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  unsetenv("RLX_ROCM_ARCH");
  EXPECT_NE(error.find("gfx999"), std::string::npos) << error;
}

// Every kernel the suites write (every primitive at every dtype, the shared suite's programs)
// renders to HIP that compiles to valid gfx90a machine code: what an MI200 would run.
TEST(RocmCodegen, EveryKernelTheSuitesWriteCompilesToAGfx90aCodeObject) {
  REQUIRE_HIP_TOOLS();
  for (const test::NamedProgram& p : test::every_kernel_programs())
    expect_compiles_to(p.ir, p.what, "gfx90a");
}

}  // namespace
}  // namespace rlx
