// What is particular to the vulkan target: the emitted GLSL and SPIR-V. What it shares with the
// other GPU-like targets (the cpu primitive suites run on vulkan, float ops at every dtype vulkan
// accepts, refusals, index errors, mixed programs, the model fixtures) is registered by
// vulkan_test_main.cpp from sdk/testing.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "target_suite.h"
#include "test_support.h"

namespace rlx {
namespace {

std::shared_ptr<Target> vulkan() {
  return test::target_named("vulkan");
}

// The emitted GLSL is what runs, and each kernel's SPIR-V passes spirv-val where it is installed.
TEST(VulkanTarget, EmitsGlslAndValidSpirv) {
  test::Emitted e(test::kEmitProgram, vulkan());
  const auto& artifacts = e.artifacts();
  ASSERT_EQ(artifacts.size(), 4u);
  EXPECT_EQ(artifacts[0].path, "vulkan_kernels.comp");
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_EQ(glsl.rfind("#version 450", 0), 0u) << glsl;
  // dot_general is a tiled product (sdk::render_matmul) with its shared arrays in its section.
  EXPECT_NE(glsl.find("//@rlx-kernel k0_dot_general\nshared float rlx_sa["), std::string::npos)
      << glsl;
  EXPECT_NE(glsl.find("//@rlx-kernel k1_gather\n"), std::string::npos) << glsl;
  bool have_val = std::system("command -v spirv-val > /dev/null 2>&1") == 0;
  for (size_t i = 1; i < artifacts.size(); ++i) {
    EXPECT_EQ(artifacts[i].kind, "spirv");
    EXPECT_GT(std::filesystem::file_size(e.dir() / artifacts[i].path), 20u);
    if (have_val)
      EXPECT_EQ(std::system(fmt::format("spirv-val --target-env vulkan1.1 '{}'",
                                        (e.dir() / artifacts[i].path).string())
                                .c_str()),
                0)
          << artifacts[i].path;
  }
}

// The first product takes the elementwise chain after it as its epilogue (one kernel, no
// stored intermediate: the bias add the tanh GELU reads twice is computed in the GELU's kernel,
// lower_to_lir's rule for small values read twice in one kernel); the second is a graph
// output, stored as it is and read by two kernels.
TEST(VulkanTarget, ProductsFuseTheirElementwiseConsumers) {
  test::Emitted e(test::kEpilogueProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_NE(
      glsl.find("f32 accumulation, then add_mul_add_broadcast_in_dim_tanh_add_broadcast_in_dim\n"),
      std::string::npos)
      << glsl;
  EXPECT_EQ(glsl.find("// k1_add_broadcast_in_dim:"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("// k3_convert:"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("// k4_exp:"), std::string::npos) << glsl;
  // The third takes its bias and then the head-splitting reshape and transpose (lower_to_lir
  // writes a product's bias add in the product's layout, so that a target can fold the split
  // into attention; here both become the epilogue): it stores the transposed layout.
  EXPECT_NE(glsl.find(", then add_broadcast_in_dim, transpose_reshape\n"), std::string::npos)
      << glsl;
  EXPECT_EQ(glsl.find("_transpose:"), std::string::npos) << glsl;
}

// A norm whose only reader is a single-row product is computed by the product's GEMV (three of
// them here, one through AMP's f16 convert); the norm that is also a graph output keeps its own
// kernel and its product reads what it stored.
TEST(VulkanTarget, SingleRowProductsNormaliseTheirOperandThemselves) {
  test::Emitted e(test::kNormProductProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_NE(glsl.find("A normalised first (RMSNorm, epsilon 1e-06)"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("A normalised first (LayerNorm, epsilon 1e-05)"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("_convert:"), std::string::npos) << glsl;
  EXPECT_EQ(test::occurrences(glsl, "Norm over rows"), 1u) << glsl;
}

// An elementwise kernel whose only reader is a single-row product is computed where the
// product's GEMV reads A (SiLU x up before an f16 product that also takes its epilogue; exp
// before a batched f32 product): no loop kernel is left.
TEST(VulkanTarget, SingleRowProductsComputeTheirOperandThemselves) {
  test::Emitted e(test::kComputedOperandProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_NE(glsl.find("A computed by convert_mul_mul_convert_slice_logistic_convert_slice, then"),
            std::string::npos)
      << glsl;
  EXPECT_NE(glsl.find("A computed by exp\n"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("domain ["), std::string::npos) << glsl;  // no loop kernel
}

// A KV cache's scatter computes the row it writes (the rotated key; the value sliced, split into
// heads and narrowed): only the two scatters are left (the shared suite's
// ScatteredUpdatesComputedByTheScatterAgreeWithCpu runs them).
TEST(VulkanTarget, ScattersComputeTheRowsTheyWrite) {
  test::Emitted e(test::kScatterUpdatesProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_EQ(test::occurrences(glsl, ", updates computed by "), 2u) << glsl;
  EXPECT_EQ(glsl.find("domain ["), std::string::npos) << glsl;  // no loop kernel
}

// A decode attention computes its rotated queries where it loads its q row: the kernel that
// rotated them is gone (ComputedQueriesOfDecodeAttentionsAgreeWithCpu runs it).
TEST(VulkanTarget, DecodeAttentionsComputeTheirQueries) {
  test::Emitted e(test::kComputedQueryProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_NE(glsl.find(", q computed by "), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("domain ["), std::string::npos) << glsl;  // no loop kernel
}

// A decode step's k norm is computed where the scatter computes the rotated key, so it keeps no
// kernel; the q norm keeps its own (the attention computes the rotated queries, not the norm:
// NormsComputedWithTheRotationsAfterThemAgreeWithCpu runs both).
TEST(VulkanTarget, ScattersComputeTheNormBeforeTheRotation) {
  test::Emitted e(test::kNormedRotationProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  EXPECT_EQ(test::occurrences(glsl, "Norm over rows"), 1u) << glsl;
  EXPECT_NE(glsl.find(", updates computed by "), std::string::npos) << glsl;
  EXPECT_NE(glsl.find(", q computed by "), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("domain ["), std::string::npos) << glsl;  // no loop kernel
}

TEST(VulkanTarget, AttentionsStoreTheHeadsTheirTransposeMerges) {
  test::Emitted e(test::kMergeHeadsProgram, vulkan());
  const std::string glsl = e.text("vulkan_kernels.comp");
  // 20 queries a head over 6 heads: few rows, so each query's keys are split over 4 invocations.
  EXPECT_NE(glsl.find("(tiled 64 keys, 4 invocations a query)"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("(rows)"), std::string::npos) << glsl;
  EXPECT_EQ(test::occurrences(glsl, "heads merged"), 2u) << glsl;
  EXPECT_EQ(glsl.find("_transpose:"), std::string::npos) << glsl;
}

// RLX_PROFILE=1 prints, when the executable goes, one row per kind of kernel with its launches;
// the shared host executor does it, so this holds on every GPU-style target.
TEST(VulkanTarget, ProfileListsEveryKernelKindWithItsLaunches) {
  ::setenv("RLX_PROFILE", "1", 1);
  testing::internal::CaptureStderr();
  NamedTensors out = test::run_text(test::kEmitProgram,
                                    {{"a", test::f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                                     {"b", test::f32({3, 2}, {1, 0, 0, 1, 1, 1})},
                                     {"i", Tensor::from<int64_t>(DType::kI64, {2}, {1, 0})}},
                                    vulkan());
  const std::string err = testing::internal::GetCapturedStderr();
  ::unsetenv("RLX_PROFILE");
  // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[1,1]] = [[4,5],[10,11]], rows swapped, then exp.
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NEAR(test::values(out.begin()->second)[0], std::exp(10.0), 0.05);
  EXPECT_NE(err.find("rlx profile (vulkan)"), std::string::npos) << err;
  // run_text runs the program twice (fresh outputs, then reused ones); the profile leaves the
  // first run out, so one launch of each.
  EXPECT_NE(err.find("over runs 2 to 2 (the first is left out)"), std::string::npos) << err;
  for (const char* kind : {"dot_general", "gather", "exp"})
    EXPECT_NE(err.find(fmt::format("       1  {}\n", kind)), std::string::npos) << kind << "\n"
                                                                                << err;
}

// Outputs read back through a staging copy (what a discrete GPU's uncached device memory gets)
// equal the cpu's. The variable takes effect where the process first reads it, so the whole
// check runs in a child process that sets it.
TEST(VulkanTarget, StagedReadbackGivesTheCpuResults) {
  if (std::getenv("RLX_VULKAN_STAGED_READBACK") == nullptr) {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const int rc =
        std::system(fmt::format("RLX_VULKAN_STAGED_READBACK=1 '{}' --gtest_filter="
                                "VulkanTarget.StagedReadbackGivesTheCpuResults > /dev/null 2>&1",
                                self)
                        .c_str());
    EXPECT_EQ(rc, 0)
        << "the staged run failed; rerun this test with RLX_VULKAN_STAGED_READBACK=1 to see why";
    return;
  }
  NamedTensors in = test::mixed_program_inputs();
  NamedTensors want = test::run_text(test::kMixedProgram, in, test::cpu_target());
  NamedTensors got = test::run_text(test::kMixedProgram, in, vulkan());
  test::expect_all_close(want, got, 1e-5, "staged readback");
  // Past 4 MB a result is copied out of the mapping by several threads in 1 MB pieces: every
  // piece, the short last one included, lands where it belongs.
  const int64_t n = (int64_t{5} << 20) / 4 + 3;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 100003);
  NamedTensors big = test::run_text(
      fmt::format("graph @t(%x: f32[{0}]) {{\n  %y = neg(%x) : f32[{0}]\n  return %y\n}}\n", n),
      {{"x", test::f32({n}, x)}}, vulkan());
  const std::vector<double> y = test::values(big.begin()->second);
  ASSERT_EQ(static_cast<int64_t>(y.size()), n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[static_cast<size_t>(i)], -static_cast<double>(i % 100003)) << "element " << i;
}

}  // namespace
}  // namespace rlx
