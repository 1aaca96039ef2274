// The hexagon target's proof in CI: a few programs, each batching many ops, built by clang's
// Hexagon backend and run under qemu-hexagon, against the cpu target on the same inputs (every
// elementwise primitive at f32, f16 and bf16, integer arithmetic and conversions, reductions over
// each axis, dot_general in f32 and through the HVX dot products); the C it writes; its
// refusals. Runs where qemu-hexagon is on PATH (or RLX_HEXAGON_EMULATOR names it) and clang has
// the Hexagon backend; skips saying which is missing otherwise.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "rlx/core/tensor.h"
#include "test_support.h"

namespace rlx::test {
namespace {

std::string qemu_on_path() {
  std::stringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/qemu-hexagon").c_str(), X_OK) == 0)
      return dir + "/qemu-hexagon";
  return "";
}

class HexagonPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* set = std::getenv("RLX_HEXAGON_EMULATOR");
    if (!set || !*set) {
      const std::string qemu = qemu_on_path();
      if (qemu.empty()) GTEST_SKIP() << "qemu-hexagon is not on PATH (Debian: qemu-user)";
      setenv("RLX_HEXAGON_EMULATOR", qemu.c_str(), 1);
    }
    Verdict v = target_named("hexagon")->can_execute();
    if (!v.ok) GTEST_SKIP() << "hexagon cannot run here: " << v.reason;
  }

  // Runs `ir` on hexagon and on the cpu and compares every output: floats within their dtype's
  // rounding (f32 2e-6 relative, f16 1e-3, bf16 8e-3, as the shared suite), integers and bools
  // exactly.
  void expect_agrees_with_cpu(const std::string& ir, const NamedTensors& inputs) {
    const NamedTensors want = run_text(ir, inputs, cpu_target());
    const NamedTensors got = run_text(ir, inputs, target_named("hexagon"));
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      const Tensor& g = got.at(name);
      ASSERT_EQ(g.dtype(), w.dtype()) << name;
      const double tol = w.dtype() == DType::kF32    ? 2e-6
                         : w.dtype() == DType::kF16  ? 1e-3
                         : w.dtype() == DType::kBF16 ? 8e-3
                                                     : 0.0;
      expect_all_close({{name, w}}, {{name, g}}, tol, name);
    }
  }
};

std::vector<float> spread(size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * static_cast<float>((i * 37) % n) / static_cast<float>(n - 1);
  return v;
}

template <typename T>
Tensor ints(DType d, std::vector<int64_t> shape, int64_t mul, int64_t add, int64_t mod) {
  Tensor t(d, shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.as<T>()[i] = static_cast<T>((i * mul + add) % mod - mod / 2);
  return t;
}

TEST_F(HexagonPrograms, ElementwiseFloatOpsAgreeWithCpu) {
  std::string ir = "graph @t(%x: f32[64], %y: f32[64]) {\n";
  std::vector<std::string> outs;
  for (const char* op : {"neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sin",
                         "cos", "floor", "ceil", "round", "logistic"}) {
    ir += fmt::format("  %{0} = {0}(%x) : f32[64]\n", op);
    outs.push_back(fmt::format("%{}", op));
  }
  for (const char* op : {"add", "sub", "mul", "div", "max", "min", "pow", "rem"}) {
    ir += fmt::format("  %{0} = {0}(%x, %y) : f32[64]\n", op);
    outs.push_back(fmt::format("%{}", op));
  }
  // 16-bit floats are computed in f32 and rounded at each op, as the renderer says.
  for (const char* d : {"f16", "bf16"}) {
    ir += fmt::format(
        "  %x{0} = convert(%x) {{dtype = {0}}} : {0}[64]\n  %y{0} = convert(%y) {{dtype = {0}}} : "
        "{0}[64]\n",
        d);
    for (const char* op : {"exp", "tanh", "sqrt"}) {
      ir += fmt::format("  %{1}{0} = {1}(%x{0}) : {0}[64]\n", d, op);
      outs.push_back(fmt::format("%{}{}", op, d));
    }
    for (const char* op : {"add", "mul", "div"}) {
      ir += fmt::format("  %{1}{0} = {1}(%x{0}, %y{0}) : {0}[64]\n", d, op);
      outs.push_back(fmt::format("%{}{}", op, d));
    }
  }
  ir += "  %gt = gt(%x, %y) : bool[64]\n  %pick = select(%gt, %x, %y) : f32[64]\n";
  outs.insert(outs.end(), {"%gt", "%pick"});
  ir += "  return " + fmt::format("{}", fmt::join(outs, ", ")) + "\n}\n";
  std::vector<float> x = spread(64, -6.0f, 6.0f), y = spread(64, -2.5f, 3.0f);
  x[0] = 0.5f, x[1] = 1.5f, x[2] = 2.5f, x[3] = -0.5f, x[4] = 0.0f;  // round: half to even
  x[5] = NAN, y[6] = NAN;  // max and min propagate NaN from either side
  expect_agrees_with_cpu(ir, {{"x", f32({64}, x)}, {"y", f32({64}, y)}});
}

TEST_F(HexagonPrograms, IntegerOpsAndConversionsAgreeWithCpu) {
  std::string ir =
      "graph @t(%a: i32[24], %b: i32[24], %c: i8[24], %d: i8[24], %e: i64[24], %f: i64[24], %x: "
      "f32[24]) {\n";
  std::vector<std::string> outs;
  for (const char* op : {"add", "sub", "mul", "div", "rem", "max", "min", "and", "or", "xor"}) {
    ir += fmt::format(
        "  %{0}32 = {0}(%a, %b) : i32[24]\n  %{0}8 = {0}(%c, %d) : i8[24]\n"
        "  %{0}64 = {0}(%e, %f) : i64[24]\n",
        op);
    outs.insert(outs.end(),
                {fmt::format("%{}32", op), fmt::format("%{}8", op), fmt::format("%{}64", op)});
  }
  ir +=
      "  %neg = neg(%a) : i32[24]\n  %abs = abs(%c) : i8[24]\n  %lt = lt(%a, %b) : bool[24]\n"
      "  %toi = convert(%x) {dtype = i32} : i32[24]\n  %toi8 = convert(%x) {dtype = i8} : i8[24]\n"
      "  %tof = convert(%e) {dtype = f32} : f32[24]\n  %tob = convert(%x) {dtype = bool} : "
      "bool[24]\n";
  outs.insert(outs.end(), {"%neg", "%abs", "%lt", "%toi", "%toi8", "%tof", "%tob"});
  ir += "  return " + fmt::format("{}", fmt::join(outs, ", ")) + "\n}\n";
  Tensor a = ints<int32_t>(DType::kI32, {24}, 7919, 13, 200001),
         b = ints<int32_t>(DType::kI32, {24}, 31, 0, 23);
  a.as<int32_t>()[0] = -2147483647 - 1, b.as<int32_t>()[0] = -1;  // INT_MIN / -1 wraps
  a.as<int32_t>()[1] = 2147483647, b.as<int32_t>()[1] = 2;
  std::vector<float> x = spread(24, -300.0f, 300.0f);
  x[0] = 3e9f, x[1] = -3e9f, x[2] = NAN, x[3] = -0.7f;  // saturating, NaN to 0, toward zero
  expect_agrees_with_cpu(ir, {{"a", a},
                              {"b", b},
                              {"c", ints<int8_t>(DType::kI8, {24}, 37, 5, 255)},
                              {"d", ints<int8_t>(DType::kI8, {24}, 11, 3, 17)},
                              {"e", ints<int64_t>(DType::kI64, {24}, 1000000007, 3, 9000000000LL)},
                              {"f", ints<int64_t>(DType::kI64, {24}, 65537, 1, 99991)},
                              {"x", f32({24}, x)}});
}

TEST_F(HexagonPrograms, ReductionsOverEachAxisAgreeWithCpu) {
  const std::string ir =
      "graph @t(%x: f32[3,5,130], %i: i32[3,5,130]) {\n"
      "  %s2 = reduce_sum(%x) {axes = [2]} : f32[3,5]\n"
      "  %m0 = reduce_max(%x) {axes = [0]} : f32[5,130]\n"
      "  %n1 = reduce_min(%x) {axes = [1]} : f32[3,130]\n"
      "  %s02 = reduce_sum(%x) {axes = [0, 2]} : f32[5]\n"
      "  %p0 = reduce_prod(%x) {axes = [0]} : f32[5,130]\n"
      "  %is = reduce_sum(%i) {axes = [1, 2]} : i32[3]\n"
      "  %im = reduce_max(%i) {axes = [2]} : i32[3,5]\n"
      "  %h = convert(%x) {dtype = f16} : f16[3,5,130]\n"
      "  %hs = reduce_sum(%h) {axes = [2]} : f16[3,5]\n"
      "  return %s2, %m0, %n1, %s02, %p0, %is, %im, %hs\n}\n";
  std::vector<float> x = spread(1950, -2.0f, 2.0f);
  x[7] = NAN;  // reaches one row of %s2, %m0, %n1 and %p0 each
  expect_agrees_with_cpu(ir, {{"x", f32({3, 5, 130}, x)},
                              {"i", ints<int32_t>(DType::kI32, {3, 5, 130}, 7919, 1, 100003)}});
}

TEST_F(HexagonPrograms, DotGeneralsAgreeWithCpuInF32AndThroughHvx) {
  const std::string ir =
      "graph @t(%a: f32[2,3,40], %b: f32[2,5,40], %w: f32[40,9], %p: i8[5,300], %q: i8[6,300],"
      " %r: i16[3,200], %s: i16[4,200], %u: i8[2,3,130], %v: i8[2,4,130], %t: i8[300,2]) {\n"
      "  %batched = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], "
      "rhs_contract = [2]} : f32[2,3,5]\n"
      "  %a2 = reshape(%a) {shape = [6, 40]} : f32[6,40]\n"
      "  %plain = dot_general(%a2, %w) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [0]} : f32[6,9]\n"
      "  %ah = convert(%a2) {dtype = f16} : f16[6,40]\n  %wh = convert(%w) {dtype = f16} : "
      "f16[40,9]\n"
      "  %half = dot_general(%ah, %wh) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [0]} : f16[6,9]\n"
      "  %i8 = dot_general(%p, %q) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [1]} : i8[5,6]\n"
      "  %i16 = dot_general(%r, %s) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [1]} : i16[3,4]\n"
      "  %i8b = dot_general(%u, %v) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], "
      "rhs_contract = [2]} : i8[2,3,4]\n"
      "  %i8loop = dot_general(%p, %t) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [0]} : i8[5,2]\n"
      "  return %batched, %plain, %half, %i8, %i16, %i8b, %i8loop\n}\n";
  expect_agrees_with_cpu(ir, {{"a", f32({2, 3, 40}, spread(240, -1.0f, 1.0f))},
                              {"b", f32({2, 5, 40}, spread(400, -2.0f, 1.5f))},
                              {"w", f32({40, 9}, spread(360, -0.5f, 0.75f))},
                              {"p", ints<int8_t>(DType::kI8, {5, 300}, 37, 5, 255)},
                              {"q", ints<int8_t>(DType::kI8, {6, 300}, 101, 7, 251)},
                              {"r", ints<int16_t>(DType::kI16, {3, 200}, 7919, 3, 65521)},
                              {"s", ints<int16_t>(DType::kI16, {4, 200}, 104729, 11, 65519)},
                              {"u", ints<int8_t>(DType::kI8, {2, 3, 130}, 53, 1, 249)},
                              {"v", ints<int8_t>(DType::kI8, {2, 4, 130}, 29, 2, 253)},
                              {"t", ints<int8_t>(DType::kI8, {300, 2}, 13, 9, 241)}});
}

// An int8 MLP as the MIR writes one (int8 weights and activations, i32 accumulation, a
// requantization to int8 with round-half-even and a ReLU clamp, i32 logits), its weights
// constants in the program's image: equal to the cpu's and to a reference computed here.
TEST_F(HexagonPrograms, Int8MlpEqualsTheCpuAndAnIntegerReference) {
  constexpr int kBatch = 4, kIn = 64, kHidden = 32, kOut = 10;
  constexpr float kScale = 1.0f / 512;
  auto pattern = [](int i, int mul, int add, int mod) { return (i * mul + add) % mod - mod / 2; };
  std::vector<int> w1(kHidden * kIn), w2(kOut * kHidden), b1(kHidden), b2(kOut), x(kBatch * kIn);
  for (int i = 0; i < kHidden * kIn; ++i) w1[i] = pattern(i, 37, 11, 255);
  for (int i = 0; i < kOut * kHidden; ++i) w2[i] = pattern(i, 53, 7, 251);
  for (int i = 0; i < kHidden; ++i) b1[i] = pattern(i, 997, 5, 4001);
  for (int i = 0; i < kOut; ++i) b2[i] = pattern(i, 611, 3, 2001);
  for (int i = 0; i < kBatch * kIn; ++i) x[i] = pattern(i, 29, 1, 255);
  auto dense = [](const std::string& type, const std::vector<int>& v) {
    return fmt::format("dense<{}: [{}]>", type, fmt::join(v, ", "));
  };
  const std::string ir = fmt::format(
      "graph @mlp(%x: i8[{0},{1}]) {{\n"
      "  %w1 = constant() {{value = {4}}} : i8[{2},{1}]\n"
      "  %b1 = constant() {{value = {5}}} : i32[{2}]\n"
      "  %w2 = constant() {{value = {6}}} : i8[{3},{2}]\n"
      "  %b2 = constant() {{value = {7}}} : i32[{3}]\n"
      "  %scale = constant() {{value = dense<f32[]: [{8}]>}} : f32[]\n"
      "  %lo = constant() {{value = dense<f32[]: [0]>}} : f32[]\n"
      "  %hi = constant() {{value = dense<f32[]: [127]>}} : f32[]\n"
      "  %xi = convert(%x) {{dtype = i32}} : i32[{0},{1}]\n"
      "  %w1i = convert(%w1) {{dtype = i32}} : i32[{2},{1}]\n"
      "  %a1 = dot_general(%xi, %w1i) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [1]}} : i32[{0},{2}]\n"
      "  %b1b = broadcast_in_dim(%b1) {{dims = [1], shape = [{0}, {2}]}} : i32[{0},{2}]\n"
      "  %s1 = add(%a1, %b1b) : i32[{0},{2}]\n"
      "  %f1 = convert(%s1) {{dtype = f32}} : f32[{0},{2}]\n"
      "  %scb = broadcast_in_dim(%scale) {{dims = [], shape = [{0}, {2}]}} : f32[{0},{2}]\n"
      "  %lob = broadcast_in_dim(%lo) {{dims = [], shape = [{0}, {2}]}} : f32[{0},{2}]\n"
      "  %hib = broadcast_in_dim(%hi) {{dims = [], shape = [{0}, {2}]}} : f32[{0},{2}]\n"
      "  %m1 = mul(%f1, %scb) : f32[{0},{2}]\n"
      "  %r1 = round(%m1) : f32[{0},{2}]\n"
      "  %x1 = max(%r1, %lob) : f32[{0},{2}]\n"
      "  %c1 = min(%x1, %hib) : f32[{0},{2}]\n"
      "  %h = convert(%c1) {{dtype = i8}} : i8[{0},{2}]\n"
      "  %hi32 = convert(%h) {{dtype = i32}} : i32[{0},{2}]\n"
      "  %w2i = convert(%w2) {{dtype = i32}} : i32[{3},{2}]\n"
      "  %a2 = dot_general(%hi32, %w2i) {{lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [1]}} : i32[{0},{3}]\n"
      "  %b2b = broadcast_in_dim(%b2) {{dims = [1], shape = [{0}, {3}]}} : i32[{0},{3}]\n"
      "  %logits = add(%a2, %b2b) : i32[{0},{3}]\n"
      "  return %h, %logits\n}}\n",
      kBatch, kIn, kHidden, kOut, dense(fmt::format("i8[{},{}]", kHidden, kIn), w1),
      dense(fmt::format("i32[{}]", kHidden), b1),
      dense(fmt::format("i8[{},{}]", kOut, kHidden), w2), dense(fmt::format("i32[{}]", kOut), b2),
      kScale);
  Tensor xt(DType::kI8, {kBatch, kIn});
  for (int i = 0; i < kBatch * kIn; ++i) xt.as<int8_t>()[i] = static_cast<int8_t>(x[i]);
  expect_agrees_with_cpu(ir, {{"x", xt}});
  // Both products read their widened int8 operands as i8 and run on HVX.
  const std::string kernels = Emitted(ir, target_named("hexagon")).text("hexagon_kernels.c");
  size_t hvx_calls = 0;
  for (size_t at = kernels.find("rlx_hvx_dot_i8("); at != std::string::npos;
       at = kernels.find("rlx_hvx_dot_i8(", at + 1))
    ++hvx_calls;
  EXPECT_EQ(hvx_calls, 2u) << kernels;

  const NamedTensors got = run_text(ir, {{"x", xt}}, target_named("hexagon"));
  std::vector<int> h(kBatch * kHidden);
  for (int b = 0; b < kBatch; ++b)
    for (int n = 0; n < kHidden; ++n) {
      int acc = b1[n];
      for (int k = 0; k < kIn; ++k) acc += x[b * kIn + k] * w1[n * kIn + k];
      const float q = std::nearbyint(static_cast<float>(acc) * kScale);
      h[b * kHidden + n] = static_cast<int>(std::min(std::max(q, 0.0f), 127.0f));
      EXPECT_EQ(got.at("h").as<int8_t>()[b * kHidden + n], h[b * kHidden + n]) << b << "," << n;
    }
  for (int b = 0; b < kBatch; ++b)
    for (int n = 0; n < kOut; ++n) {
      int acc = b2[n];
      for (int k = 0; k < kHidden; ++k) acc += h[b * kHidden + k] * w2[n * kHidden + k];
      EXPECT_EQ(got.at("logits").as<int32_t>()[b * kOut + n], acc) << b << "," << n;
    }
}

TEST(HexagonEmit, WritesTheProgramItsRuntimeAndABuildScript) {
  Emitted emitted(
      "graph @t(%p: i8[4,256], %q: i8[3,256], %x: f32[8]) {\n"
      "  %y = dot_general(%p, %q) {lhs_batch = [], lhs_contract = [1], rhs_batch = [], "
      "rhs_contract = [1]} : i8[4,3]\n"
      "  %e = exp(%x) : f32[8]\n  return %y, %e\n}\n",
      target_named("hexagon"));
  const std::string kernels = emitted.text("hexagon_kernels.c"),
                    driver = emitted.text("hexagon_main.c");
  EXPECT_NE(kernels.find("rlx_hvx_dot_i8("), std::string::npos) << kernels;
  EXPECT_EQ(kernels.find("<math.h>"), std::string::npos) << "freestanding: no libm on the DSP side";
  EXPECT_NE(driver.find("void _start(void)"), std::string::npos) << driver;
  EXPECT_NE(driver.find("rlx_read_file(\"in0_p.bin\""), std::string::npos) << driver;
  EXPECT_NE(driver.find("rlx_write_file(\"out1_e.bin\""), std::string::npos) << driver;
  EXPECT_NE(emitted.text("build.sh").find("--target=hexagon -mv67 -mhvx -mhvx-length=128b"),
            std::string::npos);
  EXPECT_NE(emitted.text("rlx_hexagon_rt.c").find("__hexagon_divsf3"), std::string::npos);
}

TEST(HexagonRefusals, F64AndLibraryCallsAreRefusedWithTheReason) {
  std::string f64 = compile_error(
      "graph @t(%x: f64[4]) {\n  %y = exp(%x) : f64[4]\n  return %y\n}\n", target_named("hexagon"));
  EXPECT_NE(f64.find("the Hexagon runtime's math is f32 only"), std::string::npos) << f64;
  std::string gather = compile_error(
      "graph @t(%x: f32[4,2], %i: i32[3]) {\n  %y = gather(%x, %i) {axis = 0} : f32[3,2]\n  return "
      "%y\n}\n",
      target_named("hexagon"));
  EXPECT_NE(
      gather.find("hexagon writes loop kernels and dot_general only, and gather is a library call"),
      std::string::npos)
      << gather;
}

TEST(HexagonStatus, IsCodegenOnlyWithoutTheEmulatorAndSaysWhy) {
  const char* set = std::getenv("RLX_HEXAGON_EMULATOR");
  const std::string saved = set ? set : "";
  unsetenv("RLX_HEXAGON_EMULATOR");
  Verdict v = target_named("hexagon")->can_execute();
  if (!saved.empty()) setenv("RLX_HEXAGON_EMULATOR", saved.c_str(), 1);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.reason.find("no Hexagon DSP runtime (FastRPC) here"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace rlx::test
