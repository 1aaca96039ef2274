// The conformance suite (sdk/testing/target_suite.h) on the metal target, its device the C++
// stand-in (msl_on_cpu_api.h: the emitted MSL compiled as C++ and run over the grid on the cpu):
// the cpu primitive suites through RLX_TEST_TARGET and the shared GPU-like tests, each against
// hand-computed references or the cpu target. The registry's metal plugin has no device here, so
// the test program provides the target itself (provide_target) under the plugin's name.
#include "msl_on_cpu_api.h"
#include "target_suite.h"
#include "test_support.h"

int main(int argc, char** argv) {
  rlx::test::provide_target("metal", std::make_shared<rlx::metal::test::MslOnCpuTarget>());
  return rlx::test::target_suite_main(
      argc, argv,
      {.name = "metal",
       .display = "MslOnCpu",
       .language = "MSL",
       .device = "TheMslOnCpuStandIn",
       // MSL has no double: the float suites run at these (FloatOpsAtEveryDtypeMslOnCpuAccepts).
       .float_dtypes = {rlx::DType::kF32, rlx::DType::kF16, rlx::DType::kBF16},
       .fixture_suite = "MslOnCpuFixtures",
       // The stand-in is given in process (provide_target), not loaded through the plugin
       // boundary, so its errors lack the boundary's "metal plugin: " prefix these two expect;
       // test_msl_on_cpu.cpp's BadGatherIndexIsReported checks the same report without it.
       // The shared minilm and bert fixture tests hold a target they have not measured to loose
       // bounds: test_msl_fixtures.cpp runs both models at the GPU-like targets' bounds instead.
       .skip_tests = {"GatherOutOfRangeIsAClearError", "ScatterOutOfRangeNamesTheNegativeIndex",
                      "MiniLmSentenceEmbeddingsMatchFloat64Reference",
                      "BertTinyOnnxMatchesOnnxRuntime"},
       // Its comparisons run at f64 too, which MSL lacks (FloatOpsAtEveryDtype compares at
       // f32, f16 and bf16).
       .skip_cpu_tests = {"CpuPrimitives.ComparisonsYieldBool"}});
}
