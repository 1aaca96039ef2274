// Runs the cpu target's primitive suites (tests/targets/cpu) and the vulkan tests on the vulkan
// target (RLX_TEST_TARGET=vulkan). Every test skips, saying why, when no Vulkan device exists.
// Mesa keeps compiled shaders in MESA_SHADER_CACHE_DIR: each run gets a temporary one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace {

class VulkanEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    rlx::Verdict v = rlx::test::target_named("vulkan")->can_execute();
    if (!v.ok) GTEST_SKIP() << "vulkan cannot run here: " << v.reason;
  }
};

}  // namespace

int main(int argc, char** argv) {
  setenv("RLX_TEST_TARGET", "vulkan", 0);
  std::string cache;
  if (!std::getenv("MESA_SHADER_CACHE_DIR")) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rlx-vulkan-tests-XXXXXX").string();
    if (mkdtemp(tmpl.data())) {
      cache = tmpl;
      setenv("MESA_SHADER_CACHE_DIR", cache.c_str(), 1);
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  // The cpu suites' tests that name the cpu itself (error text, an explicit cpu compile), and
  // the two float suites that include f64 exp/log/tanh/erf/sin/cos/pow, which GLSL has for
  // 32-bit floats only: vulkan refuses those (test_vulkan_target.cpp runs the suites at every
  // dtype vulkan accepts and checks the refusal).
  std::string filter = GTEST_FLAG_GET(filter);
  filter += filter.find('-') == std::string::npos ? "-" : ":";
  filter += "CpuStructural.GatherOutOfRangeIsAClearError:CpuStructural.SymbolicBatchIsBoundPerRunAndCached:"
            "CpuPrimitives.FloatUnaryOpsAtEveryFloatDtype:CpuPrimitives.FloatBinaryOpsAtEveryFloatDtype";
  GTEST_FLAG_SET(filter, filter);
  ::testing::AddGlobalTestEnvironment(new VulkanEnvironment);
  int rc = RUN_ALL_TESTS();
  if (!cache.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }
  return rc;
}
