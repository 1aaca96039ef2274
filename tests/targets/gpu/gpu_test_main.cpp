// Runs the cpu target's primitive suites (tests/targets/cpu) and the gpu tests on the gpu target
// (RLX_TEST_TARGET=gpu). Every test skips, saying why, when no OpenCL device exists here.
// PoCL keeps compiled kernels in POCL_CACHE_DIR: each run gets a temporary one, never the user's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace {

class GpuEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    rlx::Verdict v = rlx::test::target_named("gpu")->can_execute();
    if (!v.ok) GTEST_SKIP() << "gpu cannot run here: " << v.reason;
  }
};

}  // namespace

int main(int argc, char** argv) {
  setenv("RLX_TEST_TARGET", "gpu", 0);
  std::string cache;
  if (!std::getenv("POCL_CACHE_DIR")) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rlx-gpu-tests-XXXXXX").string();
    if (mkdtemp(tmpl.data())) {
      cache = tmpl;
      setenv("POCL_CACHE_DIR", cache.c_str(), 1);
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  // The cpu suites' tests that name the cpu itself: its error text and a test that compiles for
  // cpu explicitly. Their gpu counterparts are in test_gpu_target.cpp.
  std::string filter = GTEST_FLAG_GET(filter);
  filter += filter.find('-') == std::string::npos ? "-" : ":";
  filter += "CpuStructural.GatherOutOfRangeIsAClearError:CpuStructural.SymbolicBatchIsBoundPerRunAndCached";
  GTEST_FLAG_SET(filter, filter);
  ::testing::AddGlobalTestEnvironment(new GpuEnvironment);
  int rc = RUN_ALL_TESTS();
  if (!cache.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }
  return rc;
}
