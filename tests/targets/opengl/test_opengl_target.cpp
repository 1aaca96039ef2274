// What is particular to the opengl target (the 32/64-bit primitive suites of tests/targets/cpu
// run here on opengl): float ops at f32 and f64 against double references, its refusals (8- and
// 16-bit storage, f64 transcendentals), index errors, 2D dispatch, the emitted GLSL, and a whole
// program against the cpu.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

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

std::shared_ptr<Target> opengl() { return test::target_named("opengl"); }

std::string compile_error(const std::string& ir) {
  try {
    Session s(opengl());
    s.compile(parse_graph(ir, "test.rlx"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor make(DType d, const std::vector<double>& v) {
  Tensor t(d, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) {
    if (d == DType::kF16) t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v[i]));
    if (d == DType::kBF16) t.as<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v[i]));
    if (d == DType::kF32) t.as<float>()[i] = static_cast<float>(v[i]);
    if (d == DType::kF64) t.as<double>()[i] = v[i];
  }
  return t;
}

double round_to(DType d, double v) {
  if (d == DType::kF16) return f16_to_f32(f32_to_f16(static_cast<float>(v)));
  if (d == DType::kBF16) return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
  if (d == DType::kF32) return static_cast<float>(v);
  return v;
}

void expect_close(DType d, const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  // f16/bf16 results are rounded once from f32, so they may land one 16-bit ulp away.
  const double tol = d == DType::kF16 ? 1e-3 : d == DType::kBF16 ? 8e-3 : d == DType::kF32 ? 2e-6 : 1e-13;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << " [" << i << "]";
    }
  }
}

const std::vector<double> kX = {-2.0, -0.5, 0.0, 0.5, 2.0, 3.0};
const std::vector<double> kY = {1.5, -0.25, 2.0, 0.5, -3.0, 4.0};

// The cpu suite's float tables, at f32, f16 and bf16 for every op and at f64 for the ops GLSL
// has in double precision; the others are refused at f64 (RefusesF64Transcendentals).
TEST(OpenGlTarget, FloatOpsAtEveryDtypeOpenGlAccepts) {
  const std::vector<std::pair<const char*, std::function<double(double)>>> unary = {
      {"neg", [](double x) { return -x; }},          {"abs", [](double x) { return std::fabs(x); }},
      {"sign", [](double x) { return double((x > 0) - (x < 0)); }},
      {"exp", [](double x) { return std::exp(x); }}, {"log", [](double x) { return std::log(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }}, {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }}, {"erf", [](double x) { return std::erf(x); }},
      {"sin", [](double x) { return std::sin(x); }},   {"cos", [](double x) { return std::cos(x); }},
      {"floor", [](double x) { return std::floor(x); }}, {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"logistic", [](double x) { return 1 / (1 + std::exp(-x)); }}};
  const std::vector<std::pair<const char*, std::function<double(double, double)>>> binary = {
      {"add", [](double a, double b) { return a + b; }},  {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},  {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return std::max(a, b); }},
      {"min", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
      {"rem", [](double a, double b) { return std::fmod(a, b); }}};
  const std::vector<std::string> f32_only = {"exp", "log", "tanh", "erf", "sin", "cos", "pow", "logistic"};
  auto skip = [&](DType d, const std::string& op) {
    return d == DType::kF64 && std::find(f32_only.begin(), f32_only.end(), op) != f32_only.end();
  };
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64}) {
    auto t = fmt::format("{}[6]", dtype_name(d));
    for (auto& [op, ref] : unary) {
      if (skip(d, op)) continue;
      auto out = run_text(fmt::format("graph @t(%x: {0}) {{\n  %y = {1}(%x) : {0}\n  return %y\n}}\n", t, op),
                          {{"x", make(d, kX)}}, opengl());
      std::vector<double> want;
      for (double x : kX) want.push_back(round_to(d, ref(round_to(d, x))));
      expect_close(d, values(out.at("y")), want, fmt::format("{} {}", op, dtype_name(d)));
    }
    for (auto& [op, ref] : binary) {
      if (skip(d, op)) continue;
      auto out = run_text(
          fmt::format("graph @t(%x: {0}, %y: {0}) {{\n  %z = {1}(%x, %y) : {0}\n  return %z\n}}\n", t, op),
          {{"x", make(d, kX)}, {"y", make(d, kY)}}, opengl());
      std::vector<double> want;
      for (size_t i = 0; i < kX.size(); ++i) want.push_back(round_to(d, ref(kX[i], kY[i])));
      expect_close(d, values(out.at("z")), want, fmt::format("{} {}", op, dtype_name(d)));
    }
  }
}

TEST(OpenGlTarget, F64ConstantsKeepTheirBits) {
  // A bare 0.1 is a float in GLSL; the dialect writes 0.1lf.
  auto out = run_text("graph @t(%x: f64[1]) {\n  %c = constant() {value = dense<f64[1]: [0.1]>} : f64[1]\n  %y = add(%x, %c) : f64[1]\n  return %y\n}\n",
                      {{"x", make(DType::kF64, {0})}}, opengl());
  EXPECT_EQ(out.at("y").as<double>()[0], 0.1);
}

TEST(OpenGlTarget, RunsOnAnOpenGlContext) { EXPECT_TRUE(opengl()->can_execute().ok) << opengl()->can_execute().reason; }

TEST(OpenGlTarget, RefusesComplexWithTheReason) {
  std::string msg = compile_error("graph @t(%x: c64[4], %y: c64[4]) {\n  %z = add(%x, %y) : c64[4]\n  return %z\n}\n");
  EXPECT_NE(msg.find("GLSL has no complex type, so opengl has no c64 kernel for add"), std::string::npos) << msg;
}

TEST(OpenGlTarget, RefusesF64TranscendentalsWithTheReason) {
  std::string msg = compile_error("graph @t(%x: f64[4]) {\n  %y = exp(%x) : f64[4]\n  return %y\n}\n");
  EXPECT_NE(msg.find("GLSL has exp for 32-bit floats only, so opengl cannot compute it in f64; convert the "
                     "model to f32 first (rlx never narrows f64 silently)"),
            std::string::npos)
      << msg;
}

TEST(OpenGlTarget, GatherOutOfRangeIsAClearError) {
  try {
    run_text("graph @t(%x: f32[4,2], %i: i32[2]) {\n  %y = gather(%x, %i) {axis = 0} : f32[2,2]\n  return %y\n}\n",
             {{"x", f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}, {"i", Tensor::from<int32_t>(DType::kI32, {2}, {1, 4})}},
             opengl());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "opengl plugin: gather: index 4 (at position 1 of the indices) is out of range for an axis of size 4");
  }
}

TEST(OpenGlTarget, ScatterOutOfRangeNamesTheNegativeIndex) {
  try {
    run_text("graph @t(%x: f32[3], %i: i64[2], %u: f32[2]) {\n  %y = scatter(%x, %i, %u) {axis = 0, reduce = \"add\"} : f32[3]\n  return %y\n}\n",
             {{"x", f32({3}, {0, 0, 0})}, {"i", Tensor::from<int64_t>(DType::kI64, {2}, {-1, -5000000000})},
              {"u", f32({2}, {1, 2})}},
             opengl());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "opengl plugin: scatter: index -5000000000 (at position 1 of the indices) is out of range for an axis of size 3");
  }
}

TEST(OpenGlTarget, WorkBeyondOneDispatchDimensionRuns) {
  // 2^23 work-items: 131072 groups of 64, past the 65535 groups of one grid dimension.
  const int64_t n = int64_t{1} << 23;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
  auto out = run_text(fmt::format("graph @t(%x: f32[{0}]) {{\n  %y = neg(%x) : f32[{0}]\n  return %y\n}}\n", n),
                      {{"x", f32({n}, x)}}, opengl());
  const float* y = out.at("y").as<float>();
  EXPECT_EQ(y[0], -0.0f);
  EXPECT_EQ(y[n - 1], -static_cast<float>((n - 1) % 1000));
  EXPECT_EQ(y[n / 2 + 7], -static_cast<float>((n / 2 + 7) % 1000));
}

TEST(OpenGlTarget, RefusesNarrowIntegersWithTheReason) {
  std::string msg = compile_error("graph @t(%x: i16[4], %y: i16[4]) {\n  %z = add(%x, %y) : i16[4]\n  return %z\n}\n");
  EXPECT_NE(msg.find("OpenGL 4.3 has no 8- or 16-bit integer types, so opengl cannot compute the i16 values of add; "
                     "use --target vulkan"),
            std::string::npos)
      << msg;
}

// bool and f16 elements share 32-bit words: neighbours written by different invocations keep
// each other's bytes (odd lengths, offsets inside a word).
TEST(OpenGlTarget, PackedBoolAndF16ElementsKeepTheirNeighbours) {
  const int64_t n = 4099;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37) % 101) - 50;
    y[i] = static_cast<float>((i * 53) % 97) - 48;
  }
  const char* ir = R"(graph @t(%x: f32[4099], %y: f32[4099]) {
  %p = lt(%x, %y) : bool[4099]
  %h = convert(%x) {dtype = f16} : f16[4099]
  %s = slice(%h) {limit = [4098], start = [1], strides = [1]} : f16[4097]
  %q = not(%p) : bool[4099]
  return %p, %q, %s
}
)";
  NamedTensors in = {{"x", f32({n}, x)}, {"y", f32({n}, y)}};
  auto want = run_text(ir, in, test::cpu_target());
  auto got = run_text(ir, in, opengl());
  for (const char* name : {"p", "q", "s"}) EXPECT_EQ(values(got.at(name)), values(want.at(name))) << name;
}

// The emitted GLSL is GLSL 4.30 with plain bindings (no Vulkan descriptor sets).
TEST(OpenGlTarget, EmitsGlsl430) {
  Graph g = parse_graph("graph @t(%x: f32[4]) {\n  %y = exp(%x) : f32[4]\n  return %y\n}\n", "t");
  Session s(opengl());
  auto m = s.compile(g);
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / fmt::format("rlx-opengl-emit-{}", getpid());
  auto artifacts = opengl()->emit(m.lir_for({}), dir);
  ASSERT_EQ(artifacts.size(), 1u);
  std::ifstream in(dir / "opengl_kernels.comp");
  std::stringstream text;
  text << in.rdbuf();
  fs::remove_all(dir);
  EXPECT_EQ(text.str().rfind("#version 430", 0), 0u);
  EXPECT_NE(text.str().find("layout(std430, binding = 1) restrict buffer B1 { float b1[]; };"), std::string::npos)
      << text.str();
}

// A program mixing every kind of kernel at 32/64-bit dtypes, on opengl and on cpu.
TEST(OpenGlTarget, MixedProgramAgreesWithCpu) {
  const char* ir = R"(graph @t(%a: f32[2,3,4], %b: f32[2,4,5], %ids: i64[3]) {
  %d = dot_general(%a, %b) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]} : f32[2,3,5]
  %m = reduce_max(%d) {axes = [2]} : f32[2,3]
  %t = tanh(%m) : f32[2,3]
  %r = reshape(%d) {shape = [6, 5]} : f32[6,5]
  %g = gather(%r, %ids) {axis = 0} : f32[3,5]
  %s = scatter(%r, %ids, %g) {axis = 0, reduce = "add"} : f32[6,5]
  %it = iota() {dim = 1, dtype = i64, shape = [2, 3]} : i64[2,3]
  %ip = pow(%it, %it) : i64[2,3]
  return %s, %t, %ip, %g
}
)";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(24), b(40);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  NamedTensors in = {{"a", f32({2, 3, 4}, a)}, {"b", f32({2, 4, 5}, b)},
                     {"ids", Tensor::from<int64_t>(DType::kI64, {3}, {5, -6, 5})}};
  auto want = run_text(ir, in, test::cpu_target());
  auto got = run_text(ir, in, opengl());
  for (auto& [name, t] : want) {
    auto w = values(t), g = values(got.at(name));
    ASSERT_EQ(w.size(), g.size()) << name;
    for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6 * std::max(1.0, std::fabs(w[i]))) << name << "[" << i << "]";
  }
}

}  // namespace
}  // namespace rlx
