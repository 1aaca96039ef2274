// The conformance suite every target shares (the GPU-style targets, the SDK's skeleton, a vendor's
// target), registered from one description of the target instead of copied into each suite.
//
// A target that can run here gets: the primitive suites (test_primitives.cpp, test_structural.cpp,
// test_hir_ops.cpp, test_matmul.cpp, written for cpu and run on it through RLX_TEST_TARGET), the
// shared tests below under the suite "<display>Target", and whatever the build adds
// (add_suite_extension: the model fixtures, in the rlx tree). Its test main is one call:
//
//   int main(int argc, char** argv) {
//     return rlx::test::target_suite_main(argc, argv, {.name = "vulkan", .display = "Vulkan",
//     ...});
//   }
//
// and its own test file holds only what is particular to it (its emitted source, its own
// refusals). Codegen-only targets (no device here) call register_codegen_only_tests instead.
// CMake: rlx_add_target_tests (sdk/cmake/RLXTargetTests.cmake), in tree and out of tree.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "rlx/core/dtype.h"
#include "rlx/core/runtime.h"

namespace rlx::test {

struct SuiteTarget {
  std::string name;      // the plugin's target name: "vulkan"
  std::string display;   // the stem of test names: "Vulkan" -> VulkanTarget.*,
                         // FloatOpsAtEveryDtypeVulkanAccepts
  std::string language;  // the kernel language its refusals name: "GLSL", "OpenCL C"
  std::string device;    // RunsOn<device>: "AVulkanDevice"
  // The driver's compiled-kernel cache variable ("MESA_SHADER_CACHE_DIR", "POCL_CACHE_DIR"): each
  // run points it at a fresh temporary folder, never the user's. "" for none.
  std::string cache_env;
  // Float dtypes the target computes. Unless they are all four float dtypes with every op, the
  // cpu float suites are left out and FloatOpsAtEveryDtype<display>Accepts runs the same tables
  // at these dtypes instead.
  std::vector<DType> float_dtypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kF64};
  // Ops the language has for 32-bit floats only, which the target refuses at f64 (checked by
  // RefusesF64TranscendentalsWithTheReason). Empty: every op at every float dtype.
  std::vector<std::string> f64_single_only;
  // bool and f16 stored packed in 32-bit words (no 8/16-bit storage: opengl, webgpu): runs
  // PackedBoolAndF16ElementsKeepTheirNeighbours.
  bool packed_subword = false;
  // The device's buffers are host memory (a host target such as the SDK's skeleton), not
  // buffers only the device can address.
  bool host_memory = false;
  // The suite of the model fixture tests ("GpuFixtures"); "" runs none.
  std::string fixture_suite;
  // Shared tests this target does not take (say why next to the list), and further cpu suite
  // tests to leave out (gtest filter patterns).
  std::vector<std::string> skip_tests;
  std::vector<std::string> skip_cpu_tests;
};

// The ops GLSL (and HLSL) have for 32-bit floats only: exp, log, tanh, erf, sin, cos, pow and
// logistic. Written out here, not taken from the plugins, so the tests check their lists. Inline,
// so a test file's static initializers may read it.
inline const std::vector<std::string> kShaderF32OnlyOps = {"exp", "log", "tanh", "erf",
                                                           "sin", "cos", "pow",  "logistic"};

// A program mixing every kind of kernel (fused elementwise, reductions, dot_general with batch
// dims, gather, scatter-add, f16 and i64 arithmetic; outputs s, t, hs, ip, g), and inputs for it
// (a, b, ids, h; seeded, so every run and every target gets the same).
extern const char* const kMixedProgram;
NamedTensors mixed_program_inputs();

// A small program whose module has each kind of kernel a target writes: dot_general (k0), gather
// (k1) and a loop kernel (exp), for the tests of a target's emitted source.
extern const char* const kEmitProgram;
// A product through a bias add, then z * tanh(z) plus a residual (two loop kernels: z is read
// twice), a second product that is a graph output, converted and exponentiated, and a third
// through a bias and the transpose that splits heads:
// ProductEpiloguesAgreeWithCpu, and the targets' emit tests check the fused epilogue's text.
extern const char* const kEpilogueProgram;
// Two Attentions (20 queries a head: the tiled kernel; 2: one work-item per row), each followed
// by the transpose that merges heads: AttentionsStoreMergedHeadsAndAgreeWithCpu, and the
// targets' emit tests check that no transpose kernel is left.
extern const char* const kMergeHeadsProgram;
// Norms of one row each feeding a single-row product: an RMSNorm narrowed to f16 (AMP) before
// an f16 product widened to f32 after it (an epilogue, as AMP's vocabulary head), a LayerNorm with a bias, an f32 RMSNorm, and an RMSNorm without scale that is
// also a graph output (so it keeps its own kernel): NormsBeforeSingleRowProductsAgreeWithCpu, and
// the targets' emit tests check which products normalise A themselves.
extern const char* const kNormProductProgram;
// A decode step's q and k heads normalised (RMSNorm over each head's 16) and rotated, the key
// scattered into a cache that the attention of the rotated queries reads: where the scatter
// computes the key's rotation it computes the k norm too (the q norm keeps its kernel).
extern const char* const kNormedRotationProgram;
// Single-row products whose A only an elementwise kernel computes: SiLU(gate) x up out of one
// f16 buffer, narrowed (AMP), before an f16 product whose result is widened and added to a
// residual (an epilogue too), and exp before a batched f32 product:
// ComputedOperandsOfSingleRowProductsAgreeWithCpu, and the targets' emit tests check which
// products compute A themselves.
extern const char* const kComputedOperandProgram;
// A decode step's cache updates: the key row rotated (slice, split heads, rotate halves) and the
// value row sliced, split into heads and narrowed to f16, each scattered into its cache at
// `position`. On the targets whose scatter computes its updates, neither row is stored.
extern const char* const kScatterUpdatesProgram;
// A decode step's attention whose queries one elementwise kernel rotates (split into heads,
// rotated halves) and only the attention reads: on the targets whose attention computes q
// itself, that kernel is not launched (ComputedQueriesOfDecodeAttentionsAgreeWithCpu).
extern const char* const kComputedQueryProgram;
// Attentions whose q, k and v come through the transpose that splits heads ([B, S, H, D] to
// [B, H, S, D]), with grouped kv heads, tiled (20 queries a head) and per row (2):
// AttentionsReadSplitHeadsAndAgreeWithCpu.
extern const char* const kSplitHeadsProgram;
// q, k and v as column slices of one product's rows (suite_programs.cpp says which).
std::string sliced_heads_program();

// IR text and what it holds, for messages.
struct NamedProgram {
  std::string ir;
  std::string what;  // "f16", "kMixedProgram"
};

// Programs that together hold every kind of kernel a GPU-like target writes: every elementwise
// primitive at every dtype the cpu computes (reductions, conversions and select included), bool
// logic, and the shared suite's programs (fused product epilogues, native attention and norms,
// gather, scatter-add, f16 and i64 arithmetic). A target's codegen tests compile each for its
// architecture, so what its device runs in the conformance suite is known to compile without one.
std::vector<NamedProgram> every_kernel_programs();

// Registers the shared tests of a target that runs here (see the top of this file).
void register_target_suite_tests(const SuiteTarget& target);

// Registers `body` as the test suite.name, unless the target's skip_tests names it.
void register_function_test(const SuiteTarget& target, const std::string& suite,
                            const std::string& name, std::function<void()> body);

// Tests a build adds to every executing target's suite (the rlx tree's model fixtures, which
// need its data): each extension runs after the shared tests are registered. Call it from a
// static initializer of a file compiled into the test program; returns true for that purpose.
using SuiteExtension = void (*)(const SuiteTarget& target);
bool add_suite_extension(SuiteExtension extension);

// The whole test main of a target that runs here: sets RLX_TEST_TARGET (so the cpu suites run on
// it), gives the driver a temporary kernel cache, leaves out the cpu tests that name the cpu
// itself (and the float suites, see float_dtypes), skips every test saying why when the target
// cannot run, registers the shared tests and runs them all.
int target_suite_main(int argc, char** argv, const SuiteTarget& target);

// The shared tests of a codegen-only target (compile-time checks):
// ComplexProgramsCompileOnTheirParts, and RefusesF64TranscendentalsWithTheReason when
// f64_single_only is set. Call it before RUN_ALL_TESTS (a static initializer in the test file will
// do).
void register_codegen_only_tests(const SuiteTarget& target);

}  // namespace rlx::test
