// The rocm suite: the shared GPU-like tests (sdk/testing/target_suite.h) with what rocm is: HIP,
// every op at every float dtype (so the cpu float suites run unchanged). It runs on an AMD GPU, or
// with RLX_ROCM_VIA_CUDA=1 on an NVIDIA GPU through NVRTC (the HIP kernels' semantics, not AMD
// performance: tests/gpu/run-on-device.sh `run rocm`); elsewhere every test skips with the reason.
// rocm's own tests, which compile kernels to gfx90a code objects without a device, are
// test_rocm_target.cpp (rlx_rocm_codegen_tests).
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(argc, argv,
                                      {.name = "rocm",
                                       .display = "Rocm",
                                       .language = "HIP",
                                       .device = "ARocmDevice",
                                       .fixture_suite = "RocmFixtures"});
}
