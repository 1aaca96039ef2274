// The cuda suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what cuda is: CUDA
// C++ through NVRTC, every op at every float dtype (so the cpu float suites run unchanged).
// Without a CUDA device every test skips with the reason. cuda's own tests, which compile kernels
// to cubins without a device, are test_cuda_target.cpp (rlx_cuda_codegen_tests).
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                      {.name = "cuda",
                                       .display = "Cuda",
                                       .language = "CUDA C++",
                                       .device = "ACudaDevice",
                                       .fixture_suite = "CudaFixtures"});
}
