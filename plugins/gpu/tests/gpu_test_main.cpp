// The gpu suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what gpu
// is: OpenCL C, every op at every float dtype (so the cpu float suites run unchanged), compiled
// kernels cached by PoCL. Its own tests are test_gpu_target.cpp.
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                  {.name = "gpu",
                                   .display = "Gpu",
                                   .language = "OpenCL C",
                                   .device = "AnOpenClDevice",
                                   .cache_env = "POCL_CACHE_DIR",
                                   .fixture_suite = "GpuFixtures"});
}
