// The mlx suite: the shared conformance tests (sdk/testing/target_suite.h) run by Apple's MLX
// library (its cpu device from PyPI's mlx-cpu here).
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(
      argc, argv,
      {.name = "mlx",
       .display = "Mlx",
       .language = "MLX as rlx maps it",
       .device = "AnMlxDevice",
       // MLX's cpu computes these in f32 for f64 arrays; the target refuses them at f64.
       .f64_single_only = {"exp", "sin", "cos", "erf", "logistic"},
       .fixture_suite = "MlxFixtures",
       // The mlx target keeps tensors in MLX arrays of its own, not in an rlx Device: bindings
       // are host memory (each run copies its inputs in; weights are borrowed once per target).
       // In-place cache updates are decided on LIR, which a MIR-level target never has, so its
       // cache outputs are fresh host buffers: the two tests that check a cache is not copied
       // do not apply (qwen3-tiny's decode loop still runs).
       .skip_tests = {"DeviceTensorsStayOnTheDeviceAcrossRuns", "KvCacheUpdatesInPlace",
                      "F16KvCacheDecodeStepsAgreeWithCpu"}});
}
