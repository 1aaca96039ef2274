// Runs the cpu target's primitive suites (tests/targets/cpu) and the opengl tests on the opengl
// target (RLX_TEST_TARGET=opengl). Every test skips, saying why, when no OpenGL 4.3 context can
// be made. Mesa keeps compiled shaders in MESA_SHADER_CACHE_DIR: each run gets a temporary one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_support.h"

namespace {

class OpenGlEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    rlx::Verdict v = rlx::test::target_named("opengl")->can_execute();
    if (!v.ok) GTEST_SKIP() << "opengl cannot run here: " << v.reason;
  }
};

}  // namespace

int main(int argc, char** argv) {
  setenv("RLX_TEST_TARGET", "opengl", 0);
  std::string cache;
  if (!std::getenv("MESA_SHADER_CACHE_DIR")) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "rlx-opengl-tests-XXXXXX").string();
    if (mkdtemp(tmpl.data())) {
      cache = tmpl;
      setenv("MESA_SHADER_CACHE_DIR", cache.c_str(), 1);
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  // Left out: the cpu suites' tests that name the cpu itself, and the two float suites that
  // include f64 transcendentals (test_opengl_target.cpp runs them at f32, f16, bf16 and at f64
  // where GLSL has the op, and checks the refusal).
  std::string filter = GTEST_FLAG_GET(filter);
  filter += filter.find('-') == std::string::npos ? "-" : ":";
  filter += "CpuStructural.GatherOutOfRangeIsAClearError:CpuStructural.SymbolicBatchIsBoundPerRunAndCached:"
            "CpuPrimitives.FloatUnaryOpsAtEveryFloatDtype:CpuPrimitives.FloatBinaryOpsAtEveryFloatDtype";
  GTEST_FLAG_SET(filter, filter);
  ::testing::AddGlobalTestEnvironment(new OpenGlEnvironment);
  int rc = RUN_ALL_TESTS();
  if (!cache.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }
  return rc;
}
