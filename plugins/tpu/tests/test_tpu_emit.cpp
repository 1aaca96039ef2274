// The tpu target without a PJRT plugin: the StableHLO of small programs, exactly (a change in
// emission shows in review; the conformance suite proves on XLA that the text compiles and
// computes), its refusals, and its status when no plugin is found.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rlx/core/ir_text.h"
#include "stablehlo_emitter.h"

namespace rlx::tpu {
namespace {

// x W^T then tanh: the weight is the argument after the inputs; f32 products at HIGHEST.
const char* const kGoldenProduct =
    R"(module @rlx attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%v0: tensor<2x3xf32>, %v1: tensor<4x3xf32>) -> (tensor<2x4xf32>) {
    %v2 = stablehlo.dot_general %v0, %v1, batching_dims = [] x [], contracting_dims = [1] x [1], precision = [HIGHEST, HIGHEST] : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
    %v3 = stablehlo.tanh %v2 : tensor<2x4xf32>
    return %v3 : tensor<2x4xf32>
  }
}
)";

// Division by zero gives 0: the divisor is replaced by 1 where it is 0, the quotient by 0.
const char* const kGoldenDivision =
    R"(module @rlx attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%v0: tensor<3xi32>, %v1: tensor<3xi32>) -> (tensor<3xi32>) {
    %v2 = stablehlo.constant dense<0> : tensor<i32>
    %v3 = stablehlo.broadcast_in_dim %v2, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %v4 = stablehlo.constant dense<1> : tensor<i32>
    %v5 = stablehlo.broadcast_in_dim %v4, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %v6 = stablehlo.compare EQ, %v1, %v3, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %v7 = stablehlo.select %v6, %v5, %v1 : tensor<3xi1>, tensor<3xi32>
    %v8 = stablehlo.divide %v0, %v7 : tensor<3xi32>
    %v9 = stablehlo.select %v6, %v3, %v8 : tensor<3xi1>, tensor<3xi32>
    return %v9 : tensor<3xi32>
  }
}
)";

// Negative indices wrap by the axis size; the two i64 results after y are the first
// out-of-range position (3: none) and its index.
const char* const kGoldenGather =
    R"(module @rlx attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%v0: tensor<4x2xf32>, %v1: tensor<3xi64>) -> (tensor<3x2xf32>, tensor<i64>, tensor<i64>) {
    %v2 = stablehlo.constant dense<4> : tensor<i64>
    %v3 = stablehlo.constant dense<-4> : tensor<i64>
    %v4 = stablehlo.broadcast_in_dim %v3, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v5 = stablehlo.compare LT, %v1, %v4, SIGNED : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
    %v6 = stablehlo.broadcast_in_dim %v2, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v7 = stablehlo.compare GE, %v1, %v6, SIGNED : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
    %v8 = stablehlo.or %v5, %v7 : tensor<3xi1>
    %v9 = stablehlo.iota dim = 0 : tensor<3xi64>
    %v10 = stablehlo.constant dense<3> : tensor<i64>
    %v11 = stablehlo.broadcast_in_dim %v10, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v12 = stablehlo.select %v8, %v9, %v11 : tensor<3xi1>, tensor<3xi64>
    %v13 = stablehlo.constant dense<9223372036854775807> : tensor<i64>
    %v14 = stablehlo.reduce(%v12 init: %v13) applies stablehlo.minimum across dimensions = [0] : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %v15 = stablehlo.broadcast_in_dim %v14, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v16 = stablehlo.compare EQ, %v9, %v15, SIGNED : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
    %v17 = stablehlo.constant dense<0> : tensor<i64>
    %v18 = stablehlo.broadcast_in_dim %v17, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v19 = stablehlo.select %v16, %v1, %v18 : tensor<3xi1>, tensor<3xi64>
    %v20 = stablehlo.constant dense<0> : tensor<i64>
    %v21 = stablehlo.reduce(%v19 init: %v20) applies stablehlo.add across dimensions = [0] : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    %v22 = stablehlo.constant dense<0> : tensor<i64>
    %v23 = stablehlo.broadcast_in_dim %v22, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v24 = stablehlo.constant dense<4> : tensor<i64>
    %v25 = stablehlo.broadcast_in_dim %v24, dims = [] : (tensor<i64>) -> tensor<3xi64>
    %v26 = stablehlo.compare LT, %v1, %v23, SIGNED : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
    %v27 = stablehlo.add %v1, %v25 : tensor<3xi64>
    %v28 = stablehlo.select %v26, %v27, %v1 : tensor<3xi1>, tensor<3xi64>
    %v29 = stablehlo.reshape %v28 : (tensor<3xi64>) -> tensor<3x1xi64>
    %v30 = "stablehlo.gather"(%v0, %v29) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>}> : (tensor<4x2xf32>, tensor<3x1xi64>) -> tensor<3x2xf32>
    return %v30, %v14, %v21 : tensor<3x2xf32>, tensor<i64>, tensor<i64>
  }
}
)";

// Region arguments are the loop's own names; results of a multi-value while are %r#k.
const char* const kGoldenWhile =
    R"(module @rlx attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%v0: tensor<i64>) -> (tensor<i64>) {
    %v1:2 = stablehlo.while(%v2 = %v0, %v3 = %v0) : tensor<i64>, tensor<i64>
    cond {
      %v4 = stablehlo.compare LT, %v2, %v3, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %v4 : tensor<i1>
    } do {
      %v5 = stablehlo.add %v2, %v2 : tensor<i64>
      stablehlo.return %v5, %v3 : tensor<i64>, tensor<i64>
    }
    return %v1#1 : tensor<i64>
  }
}
)";

std::string emit(const char* ir) {
  return emit_stablehlo(parse_graph(ir)).text;
}

std::string shell(const std::string& cmd) {
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    pclose(pipe);
  }
  return out;
}

TEST(TpuEmit, ElementwiseAndAProductWithAWeight) {
  EXPECT_EQ(emit(R"(graph @t(%x: f32[2,3]) params(%w: f32[4,3]) {
  %y = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [1]} : f32[2,4]
  %z = tanh(%y) : f32[2,4]
  return %z
}
)"),
            kGoldenProduct);
}

TEST(TpuEmit, IntegerDivisionByZeroIsZero) {
  EXPECT_EQ(emit(R"(graph @t(%a: i32[3], %b: i32[3]) {
  %q = div(%a, %b) : i32[3]
  return %q
}
)"),
            kGoldenDivision);
}

TEST(TpuEmit, GatherCountsNegativeIndicesFromTheEndAndReportsOutOfRange) {
  EmittedModule m = emit_stablehlo(parse_graph(R"(graph @t(%x: f32[4,2], %i: i64[3]) {
  %y = gather(%x, %i) {axis = 0} : f32[3,2]
  return %y
}
)"));
  ASSERT_EQ(m.checks.size(), 1u);
  EXPECT_EQ(m.checks[0].count, 3);
  EXPECT_EQ(m.checks[0].axis_size, 4);
  EXPECT_EQ(m.num_results(), 3u);
  EXPECT_EQ(m.text, kGoldenGather);
}

TEST(TpuEmit, WhileLoopCarriesItsValuesThroughRegions) {
  EXPECT_EQ(emit(R"(graph @t(%n: i64[]) {
  %i, %acc = while(%n, %n) : i64[], i64[] [
    graph @cond(%ci: i64[], %ca: i64[]) {
      %go = lt(%ci, %ca) : bool[]
      return %go
    },
    graph @body(%bi: i64[], %ba: i64[]) {
      %next = add(%bi, %bi) : i64[]
      return %next, %ba
    }
  ]
  return %acc
}
)"),
            kGoldenWhile);
}

TEST(TpuEmit, RefusesComplexAndNonPrimitivesByName) {
  Verdict c = can_emit(
      {"add", {{DType::kC64, {Dim(2)}}, {DType::kC64, {Dim(2)}}}, {{DType::kC64, {Dim(2)}}}, {}});
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("no c64 kernel for add"), std::string::npos) << c.reason;
  Verdict h = can_emit({"Softmax", {{DType::kF32, {Dim(2)}}}, {{DType::kF32, {Dim(2)}}}, {}});
  EXPECT_FALSE(h.ok);
  EXPECT_NE(h.reason.find("Softmax is not one"), std::string::npos) << h.reason;
}

// No plugin: listed as codegen-only with the reason, and `rlx compile` still writes the module.
TEST(TpuStatus, WithoutAPluginItIsCodegenOnlyAndCompileWritesTheModule) {
  std::string env = "RLX_PJRT_PLUGIN=/nonexistent/pjrt_plugin.so";
  std::string list = shell(fmt::format("{} '{}' --plugin-path '{}' --list-targets 2>&1", env,
                                       RLX_BINARY, RLX_TEST_PLUGIN_DIR));
  std::string line;
  for (std::stringstream lines(list); std::getline(lines, line);)
    if (line.rfind("  tpu ", 0) == 0) break;
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << list;
  EXPECT_NE(line.find("no PJRT plugin found"), std::string::npos) << list;

  auto dir = std::filesystem::temp_directory_path() / "rlx-tpu-emit-test";
  std::filesystem::remove_all(dir);
  const std::string model = std::string(RLX_SOURCE_DIR) + "/tests/data/fixtures/minilm-l2-f16";
  std::string out = shell(fmt::format(
      "{} '{}' --plugin-path '{}' compile '{}' --target tpu --bind B=2 --bind S=16 -o '{}' 2>&1",
      env, RLX_BINARY, RLX_TEST_PLUGIN_DIR, model, dir.string()));
  std::ifstream mlir(dir / "model.mlir");
  std::stringstream text;
  text << mlir.rdbuf();
  EXPECT_NE(text.str().find("func.func public @main("), std::string::npos) << out;
  EXPECT_NE(text.str().find("stablehlo.dot_general"), std::string::npos) << out;
  EXPECT_NE(text.str().find("tensor<2x16xi64>"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// libtpu on a machine without a TPU (RLX_LIBTPU names the libtpu.so of PyPI's libtpu wheel;
// `RLX_TEST_LIBTPU=1 scripts/test.sh` installs it): the listing says codegen-only with libtpu's
// own message, exits normally, and does not wait minutes on the GCE metadata server.
TEST(TpuStatus, LibtpuWithoutATpuIsCodegenOnlyWithItsMessageAndQuickly) {
  const char* libtpu = std::getenv("RLX_LIBTPU");
  if (!libtpu || !std::filesystem::exists(libtpu))
    GTEST_SKIP() << "RLX_LIBTPU is unset or names nothing; RLX_TEST_LIBTPU=1 scripts/test.sh "
                    "installs PyPI's libtpu wheel (137 MB) and sets it";
  const auto start = std::chrono::steady_clock::now();
  std::string list = shell(fmt::format(
      "env -u TPU_SKIP_MDS_QUERY RLX_PJRT_PLUGIN='{}' timeout 300 '{}' --plugin-path '{}' "
      "--list-targets 2>/dev/null; echo exit=$?",
      libtpu, RLX_BINARY, RLX_TEST_PLUGIN_DIR));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string line;
  for (std::stringstream lines(list); std::getline(lines, line);)
    if (line.rfind("  tpu ", 0) == 0) break;
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << list;
  EXPECT_NE(line.find("creating a client failed in the PJRT plugin"), std::string::npos) << list;
  EXPECT_NE(list.find("exit=0"), std::string::npos) << list;
  EXPECT_LT(seconds, 60) << "libtpu waited on the metadata server:\n" << list;
}

}  // namespace
}  // namespace rlx::tpu
