// The gpu suite: the shared GPU-like tests (tests/targets/common/gpu_like_suite.h) with what gpu
// is: OpenCL C, every op at every float dtype (so the cpu float suites run unchanged), compiled
// kernels cached by PoCL. Its own tests are test_gpu_target.cpp.
#include "gpu_like_suite.h"

int main(int argc, char** argv) {
  return rlx::test::gpu_like_main(argc, argv,
                                  {.name = "gpu",
                                   .display = "Gpu",
                                   .language = "OpenCL C",
                                   .device = "AnOpenClDevice",
                                   .cache_env = "POCL_CACHE_DIR",
                                   .fixture_suite = "GpuFixtures"});
}
