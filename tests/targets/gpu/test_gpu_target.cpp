// What is particular to the gpu target (the primitive suites themselves are tests/targets/cpu,
// run here on gpu): its status, refusals, index errors, the emitted OpenCL C, and whole
// programs against the cpu target on the same inputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <unistd.h>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

using test::f32;
using test::run_text;
using test::values;

std::shared_ptr<Target> gpu() { return test::target_named("gpu"); }

std::string compile_error(const std::string& ir) {
  try {
    Session s(gpu());
    s.compile(parse_graph(ir, "test.rlx"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GpuTarget, RunsOnAnOpenClDevice) { EXPECT_TRUE(gpu()->can_execute().ok); }

// With the ICD loader pointed at an empty folder (ocl-icd reads OCL_ICD_VENDORS), there is no
// platform: the plugin still loads, lists itself as codegen-only and says what to install.
TEST(GpuTarget, WithoutAnOpenClDriverItIsCodegenOnlyAndSaysWhy) {
  std::filesystem::path empty = std::filesystem::temp_directory_path() / fmt::format("rlx-no-icd-{}", getpid());
  std::filesystem::create_directories(empty);
  std::string cmd = fmt::format("OCL_ICD_VENDORS='{}' '{}' --plugin-path '{}' --list-targets 2>&1", empty.string(),
                                RLX_BINARY, RLX_TEST_PLUGIN_DIR);
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    pclose(pipe);
  }
  std::filesystem::remove_all(empty);
  std::string line;
  for (std::stringstream lines(out); std::getline(lines, line);)
    if (line.rfind("  gpu ", 0) == 0) break;
  EXPECT_NE(line.find("codegen-only"), std::string::npos) << out;
  EXPECT_NE(line.find("no OpenCL platform is installed (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)); "
                      "install a driver: pocl-opencl-icd for CPUs, or the GPU vendor's OpenCL ICD"),
            std::string::npos)
      << out;
}

TEST(GpuTarget, RefusesComplexWithTheReason) {
  std::string msg = compile_error(
      "graph @t(%x: c64[4], %y: c64[4]) {\n  %z = add(%x, %y) : c64[4]\n  return %z\n}\n");
  EXPECT_NE(msg.find("OpenCL C has no complex type, so gpu has no c64 kernel for add: split "
                     "complex values into real and imaginary parts before compiling"),
            std::string::npos)
      << msg;
}

TEST(GpuTarget, GatherOutOfRangeIsAClearError) {
  try {
    run_text("graph @t(%x: f32[4,2], %i: i32[2]) {\n  %y = gather(%x, %i) {axis = 0} : f32[2,2]\n  return %y\n}\n",
             {{"x", f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}, {"i", Tensor::from<int32_t>(DType::kI32, {2}, {1, 4})}},
             gpu());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gpu plugin: gather: index 4 (at position 1 of the indices) is out of range for an axis of size 4");
  }
}

TEST(GpuTarget, ScatterOutOfRangeNamesTheNegativeIndex) {
  try {
    run_text("graph @t(%x: f32[3], %i: i64[2], %u: f32[2]) {\n  %y = scatter(%x, %i, %u) {axis = 0, reduce = \"add\"} : f32[3]\n  return %y\n}\n",
             {{"x", f32({3}, {0, 0, 0})}, {"i", Tensor::from<int64_t>(DType::kI64, {2}, {-1, -5000000000})},
              {"u", f32({2}, {1, 2})}},
             gpu());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gpu plugin: scatter: index -5000000000 (at position 1 of the indices) is out of range for an axis of size 3");
  }
}

TEST(GpuTarget, SymbolicBatchIsBoundPerRunAndCached) {
  Graph g = parse_graph("graph @t(%x: f32[B,2]) {\n  %s = reduce_sum(%x) {axes = [0]} : f32[2]\n  return %s\n}\n", "t");
  Session s(gpu());
  auto m = s.compile(g);
  EXPECT_EQ(values(m.run({{"x", f32({1, 2}, {1, 2})}}).at("s")), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(m.run({{"x", f32({3, 2}, {1, 2, 3, 4, 5, 6})}}).at("s")), (std::vector<double>{9, 12}));
}

TEST(GpuTarget, EmitsTheOpenClModuleItRuns) {
  Graph g = parse_graph(R"(graph @t(%a: f32[2,3], %b: f32[3,2], %i: i64[2]) {
  %y = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,2]
  %g = gather(%y, %i) {axis = 0} : f32[2,2]
  %e = exp(%g) : f32[2,2]
  return %e
}
)",
                        "t");
  Session s(gpu());
  auto m = s.compile(g);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("rlx-gpu-emit-{}", getpid());
  auto artifacts = gpu()->emit(m.lir_for({}), dir);
  ASSERT_EQ(artifacts.size(), 1u);
  EXPECT_EQ(artifacts[0].path, "gpu_kernels.cl");
  std::ifstream in(dir / "gpu_kernels.cl");
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove_all(dir);
  const std::string cl = text.str();
  EXPECT_NE(cl.find("#pragma OPENCL FP_CONTRACT OFF"), std::string::npos);
  EXPECT_NE(cl.find("__kernel void k0_dot_general(__global const float* restrict b0, "
                    "__global const float* restrict b1, __global float* restrict b2)"),
            std::string::npos)
      << cl;
  EXPECT_NE(cl.find("__kernel void k1_gather("), std::string::npos) << cl;
  EXPECT_NE(cl.find("get_global_id(0)"), std::string::npos);
}

// Whole programs that mix every kind of kernel (fused elementwise, reductions, dot_general with
// batch dims, gather, scatter-add, while, f16 and i64 arithmetic) on gpu and on cpu, same inputs.
TEST(GpuTarget, MixedProgramsAgreeWithCpu) {
  const char* ir = R"(graph @t(%a: f32[2,3,4], %b: f32[2,4,5], %ids: i64[3], %h: f16[2,3]) {
  %d = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]} : f32[2,3,5]
  %m = reduce_max(%d) {axes = [2]} : f32[2,3]
  %t = tanh(%m) : f32[2,3]
  %r = reshape(%d) {shape = [6, 5]} : f32[6,5]
  %g = gather(%r, %ids) {axis = 0} : f32[3,5]
  %s = scatter(%r, %ids, %g) {axis = 0, reduce = "add"} : f32[6,5]
  %hc = convert(%t) {dtype = f16} : f16[2,3]
  %hs = mul(%hc, %h) : f16[2,3]
  %it = iota() {dim = 1, dtype = i64, shape = [2, 3]} : i64[2,3]
  %ip = pow(%it, %it) : i64[2,3]
  return %s, %hs, %ip, %g
}
)";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(24), b(40), h(6);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  for (auto& x : h) x = u(rng);
  Tensor hh(DType::kF16, {2, 3});
  for (int i = 0; i < 6; ++i) hh.as<uint16_t>()[i] = f32_to_f16(h[i]);
  NamedTensors in = {{"a", f32({2, 3, 4}, a)}, {"b", f32({2, 4, 5}, b)},
                     {"ids", Tensor::from<int64_t>(DType::kI64, {3}, {5, -6, 5})}, {"h", hh}};
  auto want = run_text(ir, in, test::cpu_target());
  auto got = run_text(ir, in, gpu());
  for (auto& [name, t] : want) {
    auto w = values(t), g = values(got.at(name));
    ASSERT_EQ(w.size(), g.size()) << name;
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6 * std::max(1.0, std::fabs(w[i]))) << name << "[" << i << "]";
  }
}

}  // namespace
}  // namespace rlx
