// `rlx compile --target cuda --cuda-arch ARCH`: the PTX and the cubin are for ARCH (NVRTC runs
// here without a GPU); a malformed architecture and the option on another target are user
// errors that say what to do.
#include "cli_fixture.h"

namespace rlx::cli {
namespace {

const std::string kMiniLm = std::string(RLX_FIXTURES_DIR) + "/minilm-l2-f16";

TEST_F(CliTest, CudaArchPicksTheArchitectureOfThePtxAndTheCubin) {
  const fs::path out = dir_ / "cuda";
  ProcessResult r = rlx({"compile", kMiniLm, "--target", "cuda", "--cuda-arch", "sm_80", "--bind",
                         "B=1", "--bind", "S=8", "-o", out.string()},
                        {{"RLX_CUDA_ARCH", "sm_90"}});
  if (r.exit_code != 0 && r.err.find("cannot write its PTX and cubin") != std::string::npos)
    GTEST_SKIP() << "NVRTC is not installed here: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_TRUE(fs::exists(out / "cuda_kernels.sm_80.cubin")) << dump(r);
  std::ifstream ptx(out / "cuda_kernels.ptx");
  const std::string text((std::istreambuf_iterator<char>(ptx)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr(".target sm_80")) << dump(r);
}

TEST_F(CliTest, AMalformedCudaArchOrAnotherTargetIsAUserError) {
  ProcessResult bad = rlx({"compile", kMiniLm, "--target", "cuda", "--cuda-arch", "sm80", "--bind",
                           "B=1", "--bind", "S=8", "-o", (dir_ / "a").string()});
  EXPECT_EQ(bad.exit_code, 1) << dump(bad);
  EXPECT_THAT(bad.err, HasSubstr("--cuda-arch sm80: not a GPU architecture")) << dump(bad);
  EXPECT_THAT(bad.err, HasSubstr("such as sm_80")) << dump(bad);
  ProcessResult cpu = rlx({"compile", kMiniLm, "--target", "cpu", "--cuda-arch", "sm_90", "--bind",
                           "B=1", "--bind", "S=8", "-o", (dir_ / "b").string()});
  EXPECT_EQ(cpu.exit_code, 1) << dump(cpu);
  EXPECT_THAT(cpu.err, HasSubstr("--cuda-arch sm_90: the target cpu is not cuda")) << dump(cpu);
}

}  // namespace
}  // namespace rlx::cli
