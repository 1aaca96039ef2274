// The directx target is codegen-only (no Direct3D 12 here), so it is proven this way: its status
// and refusals say why; the HLSL it emits is the module its library plans; and that HLSL,
// compiled by glslang's HLSL front end to SPIR-V, runs on Vulkan (lavapipe) through the vulkan
// target's adapter, against the cpu target on the same inputs. glslang's HLSL front end lacks
// int64_t and 16-bit types, so the kernels run here are f32, f64 and i32 ones.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "device_executable.h"
#include "target_suite.h"
#include "hlsl_library.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"
#include "vulkan_device.h"

namespace rlx {
namespace {

std::shared_ptr<Target> directx() { return test::target_named("directx"); }

// Runs `ir` as directx plans it: HLSL -> SPIR-V (glslang) on the Vulkan device.
NamedTensors run_hlsl_on_vulkan(const std::string& ir, const NamedTensors& in) {
  std::string why;
  auto device = vulkan::VulkanDevice::create("directx", directx::hlsl_library(), vulkan::ShaderLanguage::kHlsl, &why);
  if (!device) throw Error(ErrorKind::kUser, "no Vulkan device: " + why);
  Graph g = parse_graph(ir, "test.rlx");
  Session s(directx());
  lir::Program p = s.compile(g).lir_for({});  // static shapes only
  gpu_host::DeviceExecutable exe(device, p);
  std::vector<void*> host(p.buffers.size(), nullptr);
  std::vector<Tensor> keep;
  keep.reserve(p.inputs.size());
  for (auto& [name, id] : p.inputs) {
    keep.push_back(in.at(name));
    host[id] = keep.back().data();
  }
  NamedTensors out;
  for (auto& [name, id] : p.outputs) out.emplace(name, Tensor(p.buffers[id].dtype, p.buffers[id].shape));
  for (auto& [name, id] : p.outputs) host[id] = out.at(name).data();
  exe.run(host);
  return out;
}

class DirectX : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!vulkan::VulkanDevice::probe(&why)) GTEST_SKIP() << "no Vulkan device to run the HLSL on: " << why;
  }
};

// Shared with the other GPU-like targets (sdk/testing): the complex and f64 refusals.
[[maybe_unused]] const bool kSharedTests = (test::register_codegen_only_tests({.name = "directx",
                                                              .display = "DirectX",
                                                              .language = "HLSL",
                                                              .f64_single_only = test::kShaderF32OnlyOps}),
                           true);

TEST(DirectXTarget, IsCodegenOnlyAndSaysWhy) {
  Verdict v = directx()->can_execute();
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("Direct3D 12 runs only on Windows"), std::string::npos) << v.reason;
}

TEST(DirectXTarget, RefusesEightBitTypesWithTheReason) {
  try {
    Session s(directx());
    s.compile(parse_graph("graph @t(%x: f32[4], %y: f32[4]) {\n  %z = lt(%x, %y) : bool[4]\n  return %z\n}\n", "t"));
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("HLSL has no 8-bit storage type, so directx cannot store the bool/i8/u8 "
                                         "values of lt; convert them to i32 first"),
              std::string::npos)
        << e.what();
  }
}

TEST(DirectXTarget, EmitsOneHlslShaderPerKernel) {
  test::Emitted e(R"(graph @t(%a: f32[2,3], %b: f32[3,2]) {
  %y = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,2]
  %e = exp(%y) : f32[2,2]
  return %e
}
)",
                   directx());
  ASSERT_EQ(e.artifacts().size(), 1u);
  const std::string hlsl = e.text("directx_kernels.hlsl");
  EXPECT_NE(
      hlsl.find("//@rlx-kernel k0_dot_general\ngroupshared float rlx_sa[528];\ngroupshared float "
                "rlx_sb[528];\n[[vk::binding(0, 0)]] RWStructuredBuffer<float> b0 : register(u0);"),
      std::string::npos)
      << hlsl;
  EXPECT_NE(hlsl.find("GroupMemoryBarrierWithGroupSync();"), std::string::npos) << hlsl;
  EXPECT_NE(hlsl.find("[numthreads(64, 1, 1)]\nvoid main(uint3 rlx_tid : SV_DispatchThreadID) {"), std::string::npos);
}

// Every f32 elementwise op, reductions, dot_general and gather/scatter with i32 indices, as HLSL
// on Vulkan against the cpu.
TEST_F(DirectX, HlslKernelsOnVulkanAgreeWithCpu) {
  const std::vector<std::string> unary = {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "tanh",
                                          "erf", "sin", "cos", "floor", "ceil", "round", "logistic"};
  const std::vector<std::string> binary = {"add", "sub", "mul", "div", "max", "min", "pow", "rem"};
  NamedTensors in = {{"x", test::f32({6}, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f, 3.0f})},
                     {"y", test::f32({6}, {1.5f, -0.25f, 2.0f, 0.5f, -3.0f, 4.0f})}};
  std::vector<std::string> programs;
  for (auto& op : unary) programs.push_back(fmt::format("graph @t(%x: f32[6], %y: f32[6]) {{\n  %z = {}(%x) : f32[6]\n  return %z\n}}\n", op));
  for (auto& op : binary) programs.push_back(fmt::format("graph @t(%x: f32[6], %y: f32[6]) {{\n  %z = {}(%x, %y) : f32[6]\n  return %z\n}}\n", op));
  programs.push_back(R"(graph @t(%x: f32[6], %y: f32[6]) {
  %a = reshape(%x) {shape = [2, 3]} : f32[2,3]
  %b = reshape(%y) {shape = [3, 2]} : f32[3,2]
  %d = dot_general(%a, %b) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], rhs_contract = [0]} : f32[2,2]
  %m = reduce_max(%d) {axes = [1]} : f32[2]
  %s = reduce_sum(%a) {axes = [0]} : f32[3]
  %c = convert(%x) {dtype = f64} : f64[6]
  %q = mul(%c, %c) : f64[6]
  %i = convert(%y) {dtype = i32} : i32[6]
  %r = rem(%i, %i) : i32[6]
  return %d, %m, %s, %q, %r
}
)");
  for (const std::string& ir : programs) {
    test::expect_all_close(test::run_text(ir, in, test::cpu_target()), run_hlsl_on_vulkan(ir, in), 2e-6, ir);
  }
}

TEST_F(DirectX, GatherAndScatterWithIndexChecksOnVulkan) {
  const char* ir = R"(graph @t(%x: f32[4,2], %i: i32[3], %u: f32[3,2]) {
  %g = gather(%x, %i) {axis = 0} : f32[3,2]
  %s = scatter(%x, %i, %u) {axis = 0, reduce = "add"} : f32[4,2]
  return %g, %s
}
)";
  NamedTensors in = {{"x", test::f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
                     {"i", Tensor::from<int32_t>(DType::kI32, {3}, {3, -4, 3})},
                     {"u", test::f32({3, 2}, {1, 2, 3, 4, 5, 6})}};
  auto want = test::run_text(ir, in, test::cpu_target());
  auto got = run_hlsl_on_vulkan(ir, in);
  EXPECT_EQ(test::values(got.at("g")), test::values(want.at("g")));
  EXPECT_EQ(test::values(got.at("s")), test::values(want.at("s")));
  in["i"] = Tensor::from<int32_t>(DType::kI32, {3}, {0, 4, 1});
  try {
    run_hlsl_on_vulkan(ir, in);
    FAIL() << "expected an index error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 (at position 1 of the indices) is out of range for an axis of size 4"),
              std::string::npos)
        << e.what();
  }
}

// A KV cache's scatter computes the rows it writes (the rotated key, the value row sliced out of
// k|v) where only it reads them: no loop kernel is left, and the HLSL agrees with the cpu. The
// shared program's f16 cache and i64 position become f32 and i32, which glslang's HLSL front end
// has.
TEST_F(DirectX, ScattersComputeTheRowsTheyWriteAndAgreeWithCpu) {
  std::string ir = test::kScatterUpdatesProgram;
  for (auto [from, to] : {std::pair<std::string, std::string>{"f16", "f32"}, {"i64", "i32"}})
    for (size_t at = ir.find(from); at != std::string::npos; at = ir.find(from, at)) ir.replace(at, from.size(), to);
  test::Emitted e(ir, directx());
  const std::string hlsl = e.text("directx_kernels.hlsl");
  EXPECT_EQ(test::occurrences(hlsl, ", updates computed by "), 2u) << hlsl;
  EXPECT_EQ(hlsl.find("domain ["), std::string::npos) << hlsl;  // no loop kernel
  std::vector<float> kv(64), c(8), sn(8);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = 0.25f * static_cast<float>(i) - 3.0f;
  for (size_t i = 0; i < c.size(); ++i) {
    c[i] = std::cos(0.3f * static_cast<float>(i));
    sn[i] = std::sin(0.3f * static_cast<float>(i));
  }
  std::vector<float> past(2 * 8 * 16);
  for (size_t i = 0; i < past.size(); ++i) past[i] = static_cast<float>(i % 7) - 1.5f;
  NamedTensors in = {{"past_k", test::f32({1, 2, 8, 16}, past)},
                     {"past_v", test::f32({1, 2, 8, 16}, past)},
                     {"position", Tensor::from<int32_t>(DType::kI32, {1}, {5})},
                     {"kv", test::f32({1, 1, 64}, kv)},
                     {"c", test::f32({8}, c)},
                     {"s", test::f32({8}, sn)}};
  test::expect_all_close(test::run_text(ir, in, test::cpu_target()), run_hlsl_on_vulkan(ir, in), 1e-6, ir);
}

}  // namespace
}  // namespace rlx
