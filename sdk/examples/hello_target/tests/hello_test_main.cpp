// hello's tests: the rlx conformance suite (target_suite.h) with what hello is. Copy this file
// with the target and change the description; add the target's own tests beside it.
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(
      argc, argv,
      {.name = "hello",
       .display = "Hello",
       .language = "C",
       .device = "TheHost",
       .host_memory = true,
       // hello refuses library calls (dot_general, gather, scatter, while, and the HIR ops that
       // decompose into them), with the reason: the tests built on them are left out, named here
       // so a target that writes those kernels drops them from the lists.
       .skip_tests = {"GatherOutOfRangeIsAClearError", "ScatterOutOfRangeNamesTheNegativeIndex",
                      "MixedProgramsAgreeWithCpu", "KvCacheUpdatesInPlace",
                      "F16KvCacheDecodeStepsAgreeWithCpu", "ProductEpiloguesAgreeWithCpu",
                      "NormsRunNativelyAndAgreeWithCpu", "NormsBeforeSingleRowProductsAgreeWithCpu",
                      "ComputedOperandsOfSingleRowProductsAgreeWithCpu",
                      "ScatteredUpdatesComputedByTheScatterAgreeWithCpu",
                      "ComputedQueriesOfDecodeAttentionsAgreeWithCpu",
                      "NormsComputedWithTheRotationsAfterThemAgreeWithCpu",
                      "AttentionsStoreMergedHeadsAndAgreeWithCpu",
                      "AttentionsReadSplitHeadsAndAgreeWithCpu",
                      "AttentionsReadSlicedHeadsAndAgreeWithCpu",
                      "AttentionsOfManyQueriesAgreeWithCpu", "TrainingStepsAgreeWithCpu",
                      "HalfPrecisionAttentionAgreesWithCpu"},
       .skip_cpu_tests = {"CpuStructural.DotGeneral*", "CpuMatmul.*", "CpuStructural.Gather*",
                          "CpuStructural.Scatter*", "CpuStructural.WhileLoop*", "CpuHirOps.MatMul*",
                          "CpuHirOps.Linear*", "CpuHirOps.Embedding*", "CpuHirOps.Attention*",
                          "CpuHirOps.Conv*", "CpuHirOps.Pools*"}});
}
