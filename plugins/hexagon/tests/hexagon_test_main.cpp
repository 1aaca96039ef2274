// The shared conformance suite on hexagon. It runs only where RLX_HEXAGON_EMULATOR names
// qemu-hexagon (every test skips otherwise, saying why): each program is a clang build and an
// emulator run, too many for CI, which runs test_hexagon_programs.cpp's batched programs instead.
//   RLX_HEXAGON_EMULATOR=/usr/bin/qemu-hexagon build/plugins/hexagon/tests/rlx_hexagon_tests
#include "target_suite.h"

int main(int argc, char** argv) {
  return rlx::test::target_suite_main(
      argc, argv,
      {.name = "hexagon",
       .display = "Hexagon",
       .language = "C",
       .device = "TheHexagonEmulator",
       // f64 is refused: the runtime's math is f32 only.
       .float_dtypes = {rlx::DType::kF32, rlx::DType::kF16, rlx::DType::kBF16},
       .host_memory = true,
       // Library calls other than dot_general are refused with the reason (gather, scatter,
       // while, and the HIR ops built on them: Embedding, Attention, Conv's im2col), and so is
       // f64 (ComparisonsYieldBool and F64ConstantsKeepTheirBits use it); the cpu GEMM's tile
       // tests multiply large products that take minutes under the emulator (the dot_general
       // tests cover the same kernels).
       .skip_tests = {"GatherOutOfRangeIsAClearError", "ScatterOutOfRangeNamesTheNegativeIndex",
                      "MixedProgramsAgreeWithCpu", "KvCacheUpdatesInPlace",
                      "F16KvCacheDecodeStepsAgreeWithCpu", "NormsRunNativelyAndAgreeWithCpu",
                      "AttentionsStoreMergedHeadsAndAgreeWithCpu",
                      "AttentionsReadSplitHeadsAndAgreeWithCpu",
                      "AttentionsReadSlicedHeadsAndAgreeWithCpu",
                      "AttentionsOfManyQueriesAgreeWithCpu", "F64ConstantsKeepTheirBits"},
       .skip_cpu_tests = {"CpuStructural.Gather*", "CpuStructural.Scatter*",
                          "CpuStructural.WhileLoop*", "CpuHirOps.Embedding*",
                          "CpuHirOps.Attention*", "CpuPrimitives.ComparisonsYieldBool",
                          "CpuMatmul.*", "CpuHirOps.Conv*", "CpuHirOps.Pools*"}});
}
