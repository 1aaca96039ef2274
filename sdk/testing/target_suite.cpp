// The shared tests of every target (target_suite.h): written once, registered per target with
// the target's name in them, so each target's suite keeps its own test names.
#include "target_suite.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx::test {

namespace {

std::vector<SuiteExtension>& suite_extensions() {
  static std::vector<SuiteExtension> extensions;  // filled by static initializers
  return extensions;
}

// A test whose body is a function: lets one body be registered under each target's names.
class FunctionTest : public ::testing::Test {
 public:
  explicit FunctionTest(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

bool wanted(const SuiteTarget& t, const std::string& test) {
  return std::find(t.skip_tests.begin(), t.skip_tests.end(), test) == t.skip_tests.end();
}

}  // namespace

bool add_suite_extension(SuiteExtension extension) {
  suite_extensions().push_back(extension);
  return true;
}

void register_function_test(const SuiteTarget& t, const std::string& suite, const std::string& name,
                            std::function<void()> body) {
  if (!wanted(t, name)) return;
  ::testing::RegisterTest(
      suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
      [body = std::move(body)]() -> ::testing::Test* { return new FunctionTest(body); });
}

namespace {

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

void expect_close(DType d, const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  // f16/bf16 results are rounded once from f32, so they may land one 16-bit ulp away.
  const double tol = d == DType::kF16    ? 1e-3
                     : d == DType::kBF16 ? 8e-3
                     : d == DType::kF32  ? 2e-6
                                         : 1e-13;
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
          << what << " [" << i << "]";
    }
  }
}

bool has(const std::vector<DType>& v, DType d) {
  return std::find(v.begin(), v.end(), d) != v.end();
}

// Whether the cpu float suites (every op at every float dtype) can run on the target as they are.
bool runs_cpu_float_suites(const SuiteTarget& t) {
  return t.f64_single_only.empty() && t.float_dtypes.size() == 4;
}

// The cpu suite's float tables at the dtypes the target computes (ops refused at f64 left out;
// RefusesF64TranscendentalsWithTheReason checks the refusal), against double references.
void float_ops_at_every_dtype(const SuiteTarget& t) {
  const std::vector<double> xs = {-2.0, -0.5, 0.0, 0.5, 2.0, 3.0};
  const std::vector<double> ys = {1.5, -0.25, 2.0, 0.5, -3.0, 4.0};
  const std::vector<std::pair<const char*, std::function<double(double)>>> unary = {
      {"neg", [](double x) { return -x; }},
      {"abs", [](double x) { return std::fabs(x); }},
      {"sign", [](double x) { return double((x > 0) - (x < 0)); }},
      {"exp", [](double x) { return std::exp(x); }},
      {"log", [](double x) { return std::log(x); }},
      {"sqrt", [](double x) { return std::sqrt(x); }},
      {"rsqrt", [](double x) { return 1 / std::sqrt(x); }},
      {"tanh", [](double x) { return std::tanh(x); }},
      {"erf", [](double x) { return std::erf(x); }},
      {"sin", [](double x) { return std::sin(x); }},
      {"cos", [](double x) { return std::cos(x); }},
      {"floor", [](double x) { return std::floor(x); }},
      {"ceil", [](double x) { return std::ceil(x); }},
      {"round", [](double x) { return std::nearbyint(x); }},
      {"logistic", [](double x) { return 1 / (1 + std::exp(-x)); }}};
  const std::vector<std::pair<const char*, std::function<double(double, double)>>> binary = {
      {"add", [](double a, double b) { return a + b; }},
      {"sub", [](double a, double b) { return a - b; }},
      {"mul", [](double a, double b) { return a * b; }},
      {"div", [](double a, double b) { return a / b; }},
      {"max", [](double a, double b) { return std::max(a, b); }},
      {"min", [](double a, double b) { return std::min(a, b); }},
      {"pow", [](double a, double b) { return std::pow(a, b); }},
      {"rem", [](double a, double b) { return std::fmod(a, b); }}};
  auto skip = [&](DType d, const std::string& op) {
    return d == DType::kF64 && std::find(t.f64_single_only.begin(), t.f64_single_only.end(), op) !=
                                   t.f64_single_only.end();
  };
  auto target = target_named(t.name);
  for (DType d : t.float_dtypes) {
    auto type = fmt::format("{}[6]", dtype_name(d));
    for (auto& [op, ref] : unary) {
      if (skip(d, op)) continue;
      auto out = run_text(
          fmt::format("graph @t(%x: {0}) {{\n  %y = {1}(%x) : {0}\n  return %y\n}}\n", type, op),
          {{"x", make(d, xs)}}, target);
      std::vector<double> want;
      for (double x : xs) want.push_back(round_to(d, ref(round_to(d, x))));
      expect_close(d, values(out.at("y")), want, fmt::format("{} {}", op, dtype_name(d)));
    }
    for (auto& [op, ref] : binary) {
      if (skip(d, op)) continue;
      auto out = run_text(
          fmt::format("graph @t(%x: {0}, %y: {0}) {{\n  %z = {1}(%x, %y) : {0}\n  return %z\n}}\n",
                      type, op),
          {{"x", make(d, xs)}, {"y", make(d, ys)}}, target);
      std::vector<double> want;
      for (size_t i = 0; i < xs.size(); ++i) want.push_back(round_to(d, ref(xs[i], ys[i])));
      expect_close(d, values(out.at("z")), want, fmt::format("{} {}", op, dtype_name(d)));
    }
  }
}

// A target without a complex type computes c64 on the real and imaginary parts (the
// split-complex rewrite): products, sums, the magnitude and exp against std::complex.
constexpr const char* kComplexProgram =
    "graph @t(%x: c64[4], %y: c64[4]) {\n"
    "  %p = mul(%x, %y) : c64[4]\n"
    "  %s = add(%p, %x) : c64[4]\n"
    "  %e = exp(%s) : c64[4]\n"
    "  %m = abs(%s) : f32[4]\n"
    "  return %e, %m\n}\n";

void complex_values_computed_on_parts(const SuiteTarget& t) {
  using C = std::complex<float>;
  const std::vector<C> x = {{0.5f, -1.0f}, {0.25f, 0.75f}, {-1.5f, 0.0f}, {0.0f, 0.0f}};
  const std::vector<C> y = {{1.0f, 2.0f}, {-0.5f, 0.25f}, {0.0f, -1.0f}, {3.0f, 1.0f}};
  auto c64 = [](const std::vector<C>& v) {
    Tensor out(DType::kC64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), out.as<C>());
    return out;
  };
  NamedTensors out = run_text(kComplexProgram, {{"x", c64(x)}, {"y", c64(y)}}, target_named(t.name));
  ASSERT_EQ(out.at("e").dtype(), DType::kC64);
  for (size_t i = 0; i < x.size(); ++i) {
    const std::complex<double> s = std::complex<double>(x[i]) * std::complex<double>(y[i]) +
                                   std::complex<double>(x[i]);
    const std::complex<double> e = std::exp(s);
    const C got = out.at("e").as<C>()[i];
    EXPECT_NEAR(got.real(), e.real(), 1e-5 * (1 + std::abs(e))) << "exp, element " << i;
    EXPECT_NEAR(got.imag(), e.imag(), 1e-5 * (1 + std::abs(e))) << "exp, element " << i;
    EXPECT_NEAR(out.at("m").as<float>()[i], std::abs(s), 1e-6 * (1 + std::abs(s))) << "abs, element " << i;
  }
}

// Without its device a target still compiles the split parts.
void complex_programs_compile_on_parts(const SuiteTarget& t) {
  EXPECT_EQ(compile_error(kComplexProgram, target_named(t.name)), "");
}

void refuses_f64_transcendentals(const SuiteTarget& t) {
  std::string msg = compile_error(
      "graph @t(%x: f64[4]) {\n  %y = exp(%x) : f64[4]\n  return %y\n}\n", target_named(t.name));
  EXPECT_NE(msg.find(fmt::format(
                "{} has exp for 32-bit floats only, so {} cannot compute it in f64; convert the "
                "model to f32 first (rlx never narrows f64 silently)",
                t.language, t.name)),
            std::string::npos)
      << msg;
}

void f64_constants_keep_their_bits(const SuiteTarget& t) {
  // A bare 0.1 is a float in GLSL; a dialect must write a double literal.
  auto out = run_text(
      "graph @t(%x: f64[1]) {\n  %c = constant() {value = dense<f64[1]: [0.1]>} : f64[1]\n  %y = "
      "add(%x, %c) : f64[1]\n  return %y\n}\n",
      {{"x", make(DType::kF64, {0})}}, target_named(t.name));
  EXPECT_EQ(out.at("y").as<double>()[0], 0.1);
}

// The error text the executor writes for a bad index, with the target's name in front.
void expect_index_error(const SuiteTarget& t, const std::string& ir, const NamedTensors& in,
                        const std::string& want) {
  try {
    run_text(ir, in, target_named(t.name));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("{} plugin: {}", t.name, want));
  }
}

void gather_out_of_range(const SuiteTarget& t) {
  expect_index_error(
      t,
      "graph @t(%x: f32[4,2], %i: i32[2]) {\n  %y = gather(%x, %i) {axis = 0} : f32[2,2]\n  return "
      "%y\n}\n",
      {{"x", f32({4, 2}, {0, 1, 2, 3, 4, 5, 6, 7})},
       {"i", Tensor::from<int32_t>(DType::kI32, {2}, {1, 4})}},
      "gather: index 4 (at position 1 of the indices) is out of range for an axis of size 4");
}

void scatter_out_of_range(const SuiteTarget& t) {
  expect_index_error(t,
                     "graph @t(%x: f32[3], %i: i64[2], %u: f32[2]) {\n  %y = scatter(%x, %i, %u) "
                     "{axis = 0, reduce = \"add\"} : f32[3]\n  return %y\n}\n",
                     {{"x", f32({3}, {0, 0, 0})},
                      {"i", Tensor::from<int64_t>(DType::kI64, {2}, {-1, -5000000000})},
                      {"u", f32({2}, {1, 2})}},
                     "scatter: index -5000000000 (at position 1 of the indices) is out of range "
                     "for an axis of size 3");
}

void symbolic_batch_is_bound_per_run(const SuiteTarget& t) {
  Graph g = parse_graph(
      "graph @t(%x: f32[B,2]) {\n  %s = reduce_sum(%x) {axes = [0]} : f32[2]\n  return %s\n}\n",
      "t");
  Session s(target_named(t.name));
  auto m = s.compile(g);
  EXPECT_EQ(values(m.run({{"x", f32({1, 2}, {1, 2})}}).at("s")), (std::vector<double>{1, 2}));
  EXPECT_EQ(values(m.run({{"x", f32({3, 2}, {1, 2, 3, 4, 5, 6})}}).at("s")),
            (std::vector<double>{9, 12}));
}

void work_beyond_one_dispatch_dimension(const SuiteTarget& t) {
  // 2^23 work-items: 131072 groups of 64, past the 65535 groups of one grid dimension.
  const int64_t n = int64_t{1} << 23;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
  auto out = run_text(
      fmt::format("graph @t(%x: f32[{0}]) {{\n  %y = neg(%x) : f32[{0}]\n  return %y\n}}\n", n),
      {{"x", f32({n}, x)}}, target_named(t.name));
  const float* y = out.at("y").as<float>();
  EXPECT_TRUE(std::signbit(y[0]) && y[0] == 0) << "neg(0) is -0, got " << y[0];
  int64_t wrong = 0;  // every element: a target may give one work-item several outputs
  for (int64_t i = 0; i < n; ++i) wrong += y[i] != -static_cast<float>(i % 1000);
  EXPECT_EQ(wrong, 0);
  // The same with reads across the output's order (a transpose), 2^19 elements.
  const int64_t r = 512, c = 1024;
  std::vector<float> m(r * c);
  for (int64_t i = 0; i < r * c; ++i) m[i] = static_cast<float>(i % 4099);
  auto t_out = run_text(fmt::format("graph @t(%m: f32[{0},{1}]) {{\n  %t = transpose(%m) {{perm = "
                                    "[1, 0]}} : f32[{1},{0}]\n  %y = neg(%t) : f32[{1},{0}]\n  "
                                    "return %y\n}}\n",
                                    r, c),
                        {{"m", f32({r, c}, m)}}, target_named(t.name));
  const float* ty = t_out.at("y").as<float>();
  wrong = 0;
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i < r; ++i) wrong += ty[j * r + i] != -m[i * c + j];
  EXPECT_EQ(wrong, 0);
  // A row broadcast over the same rows (a bias): the column is the same for every output a
  // work-item computes when they are whole rows apart, which a renderer may use.
  std::vector<float> row(c);
  for (int64_t j = 0; j < c; ++j) row[j] = static_cast<float>(3 * j % 1021);
  auto b_out = run_text(
      fmt::format("graph @t(%m: f32[{0},{1}], %b: f32[{1}]) {{\n  %bb = broadcast_in_dim(%b) "
                  "{{dims = [1], shape = [{0}, {1}]}} : f32[{0},{1}]\n  %y = add(%m, %bb) : "
                  "f32[{0},{1}]\n  return %y\n}}\n",
                  r, c),
      {{"m", f32({r, c}, m)}, {"b", f32({c}, row)}}, target_named(t.name));
  const float* by = b_out.at("y").as<float>();
  wrong = 0;
  for (int64_t i = 0; i < r * c; ++i) wrong += by[i] != m[i] + row[i % c];
  EXPECT_EQ(wrong, 0);
}

}  // namespace


namespace {

// kMixedProgram on the target and on cpu, same inputs.
void mixed_programs_agree_with_cpu(const SuiteTarget& t) {
  NamedTensors in = mixed_program_inputs();
  NamedTensors want = run_text(kMixedProgram, in, cpu_target()),
               got = run_text(kMixedProgram, in, target_named(t.name));
  // f16 products round once to 16 bits.
  NamedTensors want_f16 = {{"hs", want.at("hs")}};
  want.erase("hs");
  expect_all_close(want, got, 1e-6);
  expect_all_close(want_f16, got, 1e-3);
}


// Products whose results pass through elementwise kernels (a bias, z * tanh(z) which keeps the
// bias add a kernel of its own, a residual read from memory, an f16 result) get those kernels
// as fused epilogues on the GPU-style targets; a product that is also a graph output is stored
// as it is. Values against cpu, at sizes no tile divides.
void product_epilogues_agree_with_cpu(const SuiteTarget& t) {
  const char* ir = kEpilogueProgram;
  std::mt19937 rng(11);
  auto random = [&](std::vector<int64_t> shape) {
    return uniform_f32(rng, std::move(shape), 0.5f);
  };
  NamedTensors in{{"x", random({2, 37, 19})}, {"w", random({70, 19})},  {"b", random({70})},
                  {"r", random({2, 37, 70})}, {"w2", random({70, 19})}, {"w3", random({70, 19})}};
  NamedTensors want = run_text(ir, in, cpu_target()), got = run_text(ir, in, target_named(t.name));
  NamedTensors want_f16 = {{"h", want.at("h")}};
  want.erase("h");
  expect_all_close(want, got, 1e-5);
  expect_all_close(want_f16, got, 1e-3);
}

// LayerNorm and RMSNorm run natively (one group per row) on the GPU-style targets: rows longer
// than a group and of no multiple of its size, with and without scale and bias, against cpu.
void norms_agree_with_cpu(const SuiteTarget& t) {
  const char* ir = R"(graph @t(%x: f32[3,23,200], %g: f32[200], %b: f32[200]) {
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[3,23,200]
  %p = LayerNorm(%x) {epsilon = 1e-12} : f32[3,23,200]
  %q = LayerNorm(%x, %g) : f32[3,23,200]
  %r = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[3,23,200]
  return %l, %p, %q, %r
}
)";
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-2.0f, 3.0f);
  auto random = [&](std::vector<int64_t> shape, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(rng);
    return f32(std::move(shape), std::move(v));
  };
  NamedTensors in{{"x", random({3, 23, 200}, 3 * 23 * 200)},
                  {"g", random({200}, 200)},
                  {"b", random({200}, 200)}};
  Session session(target_named(t.name));
  CompiledModel m = session.compile(parse_graph(ir));
  for (const auto& e : m.report().entries)
    EXPECT_EQ(e.path, LoweringPath::kNative) << e.op << " on " << t.name;
  expect_all_close(run_text(ir, in, cpu_target()), m.run(in), 1e-5);

  // Norms of slices of one wider buffer (q and k out of a fused q|k|v product, heads of 64),
  // directly and through a convert (AMP's f16 product widened for the norm): the GPU-style
  // targets read the rows out of %y instead of copying the slices.
  const char* sliced = R"(graph @t(%y: f32[2,3,384], %h: f16[2,3,384], %g: f32[64]) {
  %q = slice(%y) {limit = [2, 3, 192], start = [0, 0, 64], strides = [1, 1, 1]} : f32[2,3,128]
  %qr = reshape(%q) {shape = [2, 3, 2, 64]} : f32[2,3,2,64]
  %qn = RMSNorm(%qr, %g) {epsilon = 1e-06} : f32[2,3,2,64]
  %k = slice(%h) {limit = [2, 3, 320], start = [0, 0, 256], strides = [1, 1, 1]} : f16[2,3,64]
  %kf = convert(%k) {dtype = f32} : f32[2,3,64]
  %kn = LayerNorm(%kf, %g) {epsilon = 1e-05} : f32[2,3,64]
  return %qn, %kn
}
)";
  NamedTensors sin{{"y", random({2, 3, 384}, 2 * 3 * 384)},
                   {"g", random({64}, 64)}};
  const std::vector<double> h = values(random({2, 3, 384}, 2 * 3 * 384));
  Tensor h16(DType::kF16, {2, 3, 384});
  for (size_t i = 0; i < h.size(); ++i)
    static_cast<uint16_t*>(h16.data())[i] = f32_to_f16(static_cast<float>(h[i]));
  sin["h"] = h16;
  expect_all_close(run_text(sliced, sin, cpu_target()), run_text(sliced, sin, target_named(t.name)),
                   1e-5);

  // Many short rows (an odd count, a row length no SIMD width divides, and sliced heads): where
  // the dialect has SIMD groups each takes a row of its own (render_norm).
  const char* many =
      R"(graph @t(%x: f32[1025,100], %g: f32[100], %b: f32[100], %y: f32[2,600,384], %gh: f32[64]) {
  %l = LayerNorm(%x, %g, %b) {epsilon = 1e-05} : f32[1025,100]
  %r = RMSNorm(%x, %g) {epsilon = 1e-06} : f32[1025,100]
  %q = slice(%y) {limit = [2, 600, 192], start = [0, 0, 64], strides = [1, 1, 1]} : f32[2,600,128]
  %qr = reshape(%q) {shape = [2, 600, 2, 64]} : f32[2,600,2,64]
  %qn = RMSNorm(%qr, %gh) {epsilon = 1e-06} : f32[2,600,2,64]
  return %l, %r, %qn
}
)";
  NamedTensors min{{"x", random({1025, 100}, 1025 * 100)},
                   {"g", random({100}, 100)},
                   {"b", random({100}, 100)},
                   {"y", random({2, 600, 384}, 2 * 600 * 384)},
                   {"gh", random({64}, 64)}};
  expect_all_close(run_text(many, min, cpu_target()), run_text(many, min, target_named(t.name)),
                   1e-5);
}

// A decode step over a KV cache kept in f16 (`rlx generate --kv-cache f16`): each step's f32
// keys and values converted and scattered into the caches in place, and an Attention of f32
// queries over the f16 caches. Four steps agree with the cpu's, and no step copies a cache.
void f16_kv_cache_decode_steps(const SuiteTarget& t) {
  const char* ir =
      R"(graph @t(%q: f32[1,4,1,16], %position: i64[1], %k: f32[1,2,1,16], %v: f32[1,2,1,16], %keep: bool[1,8], %past_k: f16[1,2,8,16], %past_v: f16[1,2,8,16]) {
  %k16 = convert(%k) {dtype = f16} : f16[1,2,1,16]
  %v16 = convert(%v) {dtype = f16} : f16[1,2,1,16]
  %pk = scatter(%past_k, %position, %k16) {axis = 2, reduce = "none"} : f16[1,2,8,16]
  %pv = scatter(%past_v, %position, %v16) {axis = 2, reduce = "none"} : f16[1,2,8,16]
  %o = Attention(%q, %pk, %pv, %keep) {mask = "padding", scale = 0.25} : f32[1,4,1,16]
  return %o, %pk, %pv
}
)";
  Session cpu_session(cpu_target()), session(target_named(t.name));
  CompiledModel want_m = cpu_session.compile(parse_graph(ir)),
                got_m = session.compile(parse_graph(ir));
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  auto random = [&](std::vector<int64_t> shape) {
    std::vector<float> v(static_cast<size_t>(shape[0] * shape[1] * shape[2] * shape[3]));
    for (auto& x : v) x = u(rng);
    return f32(std::move(shape), v);
  };
  auto zero_cache = [] {
    Tensor c(DType::kF16, {1, 2, 8, 16});
    std::memset(c.data(), 0, c.nbytes());
    return c;
  };
  Tensor want_k = zero_cache(), want_v = zero_cache(), got_k = zero_cache(), got_v = zero_cache();
  for (int64_t p = 0; p < 4; ++p) {
    std::vector<uint8_t> keep(8, 0);
    for (int64_t j = 0; j <= p; ++j) keep[j] = 1;
    NamedTensors in{{"q", random({1, 4, 1, 16})},
                    {"position", Tensor::from<int64_t>(DType::kI64, {1}, {p})},
                    {"k", random({1, 2, 1, 16})},
                    {"v", random({1, 2, 1, 16})},
                    {"keep", Tensor::from<uint8_t>(DType::kBool, {1, 8}, keep)}};
    NamedTensors want_in = in, got_in = in;
    want_in["past_k"] = want_k, want_in["past_v"] = want_v;
    got_in["past_k"] = got_k, got_in["past_v"] = got_v;
    NamedTensors want{{"pk", want_k}, {"pv", want_v}}, got{{"pk", got_k}, {"pv", got_v}};
    want_m.run(want_in, want);
    got_m.run(got_in, got);
    EXPECT_EQ(got.at("pk").data(), got_k.data()) << "step " << p << ": the key cache was copied";
    EXPECT_EQ(got.at("pv").data(), got_v.data()) << "step " << p << ": the value cache was copied";
    expect_all_close({{"o", want.at("o")}}, got, 1e-5, fmt::format("step {}", p));
  }
  // Stored as the cpu stores them: f32 -> f16 rounds to nearest even everywhere.
  EXPECT_EQ(values(got_k), values(want_k));
  EXPECT_EQ(values(got_v), values(want_v));
}

// bool and f16 elements share 32-bit words: neighbours written by different invocations keep
// each other's bytes (odd lengths, offsets inside a word).
void packed_elements_keep_their_neighbours(const SuiteTarget& t) {
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
  auto want = run_text(ir, in, cpu_target());
  auto got = run_text(ir, in, target_named(t.name));
  for (const char* name : {"p", "q", "s"})
    EXPECT_EQ(values(got.at(name)), values(want.at(name))) << name;
}

// Contract 2.0: a state kept on the target's device across runs (fed back as an input without
// visiting the host) beside a host input and a host output; values by hand.
void device_tensors_stay_on_the_device(const SuiteTarget& t) {
  std::shared_ptr<Target> target = target_named(t.name);
  Session session(target);
  CompiledModel m = session.compile(parse_graph(R"(graph @t(%x: f32[2,3], %state: f32[2,3]) {
  %n = add(%state, %x) : f32[2,3]
  %y = reduce_sum(%n) {axes = [1]} : f32[2]
  return %n, %y
}
)"));
  std::shared_ptr<Device> device = m.device();
  ASSERT_TRUE(device);
  EXPECT_EQ(device, target->device());
  NamedDeviceTensors state{
      {"state", DeviceTensor::upload(device, f32({2, 3}, {1, 2, 3, 4, 5, 6}))}};
  // A buffer of a GPU-style device is not host memory: it reaches the kernels as it is. A host
  // target's buffers are, and reach its kernels as addresses.
  if (t.host_memory)
    EXPECT_NE(device->host_address(state.at("state").buffer()), nullptr);
  else
    EXPECT_EQ(device->host_address(state.at("state").buffer()), nullptr);
  NamedTensors in{{"x", f32({2, 3}, {1, 1, 1, 1, 1, 1})}};
  NamedTensors out[2];
  NamedDeviceTensors kept[2] = {{{"n", DeviceTensor()}}, {{"n", DeviceTensor()}}};
  for (int step = 1; step <= 3; ++step) {
    m.run(in, state, out[step % 2], kept[step % 2]);
    ASSERT_EQ(out[step % 2].count("n"), 0u) << "n was asked for on the device";
    EXPECT_EQ(values(out[step % 2].at("y")), (std::vector<double>{6.0 + 3 * step, 15.0 + 3 * step}))
        << step;
    state["state"] = kept[step % 2].at("n");
  }
  EXPECT_EQ(values(state.at("state").download()), (std::vector<double>{4, 5, 6, 7, 8, 9}));
}

// Whether RLX_EXPECT_TARGETS (comma-separated) names the target: CI lists the targets its machine
// runs, so a lost driver or ICD fails the suite instead of turning it into skips.
bool expected_here(const std::string& name) {
  const char* list = std::getenv("RLX_EXPECT_TARGETS");
  std::stringstream names(list ? list : "");
  for (std::string n; std::getline(names, n, ',');)
    if (n == name) return true;
  return false;
}

struct EnvironmentCheck : ::testing::Environment {
  explicit EnvironmentCheck(std::string name) : name(std::move(name)) {}
  void SetUp() override {
    Verdict v = target_named(name)->can_execute();
    if (v.ok) return;
    if (expected_here(name))
      FAIL() << name << " cannot run here, but RLX_EXPECT_TARGETS says it must: " << v.reason;
    GTEST_SKIP() << name << " cannot run here: " << v.reason;
  }
  std::string name;
};

}  // namespace


void register_target_suite_tests(const SuiteTarget& t) {
  const std::string suite = t.display + "Target";
  auto add = [&](const std::string& name, void (*body)(const SuiteTarget&)) {
    register_function_test(t, suite, name, [t, body] { body(t); });
  };
  add("RunsOn" + t.device, [](const SuiteTarget& t) {
    Verdict v = target_named(t.name)->can_execute();
    EXPECT_TRUE(v.ok) << v.reason;
  });
  if (!runs_cpu_float_suites(t))
    add(fmt::format("FloatOpsAtEveryDtype{}Accepts", t.display), float_ops_at_every_dtype);
  if (has(t.float_dtypes, DType::kF64))
    add("F64ConstantsKeepTheirBits", f64_constants_keep_their_bits);
  if (has(t.float_dtypes, DType::kF64) && !t.f64_single_only.empty())
    add("RefusesF64TranscendentalsWithTheReason", refuses_f64_transcendentals);
  add("ComplexValuesAreComputedOnTheirParts", complex_values_computed_on_parts);
  add("GatherOutOfRangeIsAClearError", gather_out_of_range);
  add("ScatterOutOfRangeNamesTheNegativeIndex", scatter_out_of_range);
  add("SymbolicBatchIsBoundPerRunAndCached", symbolic_batch_is_bound_per_run);
  add("WorkBeyondOneDispatchDimensionRuns", work_beyond_one_dispatch_dimension);
  add("MixedProgramsAgreeWithCpu", mixed_programs_agree_with_cpu);
  add("ProductEpiloguesAgreeWithCpu", product_epilogues_agree_with_cpu);
  add("NormsRunNativelyAndAgreeWithCpu", norms_agree_with_cpu);
  add("DeviceTensorsStayOnTheDeviceAcrossRuns", device_tensors_stay_on_the_device);
  add("KvCacheUpdatesInPlace",
      [](const SuiteTarget& t) { check_in_place_cache_update(target_named(t.name)); });
  add("F16KvCacheDecodeStepsAgreeWithCpu", f16_kv_cache_decode_steps);
  if (t.packed_subword)
    add("PackedBoolAndF16ElementsKeepTheirNeighbours", packed_elements_keep_their_neighbours);
  for (SuiteExtension extension : suite_extensions()) extension(t);
}

void register_codegen_only_tests(const SuiteTarget& t) {
  const std::string suite = t.display + "Target";
  register_function_test(t, suite, "ComplexProgramsCompileOnTheirParts",
                         [t] { complex_programs_compile_on_parts(t); });
  if (!t.f64_single_only.empty())
    register_function_test(t, suite, "RefusesF64TranscendentalsWithTheReason",
                           [t] { refuses_f64_transcendentals(t); });
}

int target_suite_main(int argc, char** argv, const SuiteTarget& t) {
  setenv("RLX_TEST_TARGET", t.name.c_str(), 0);
  std::string cache;
  if (!t.cache_env.empty() && !std::getenv(t.cache_env.c_str())) {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / fmt::format("rlx-{}-tests-XXXXXX", t.name))
            .string();
    if (mkdtemp(tmpl.data())) {
      cache = tmpl;
      setenv(t.cache_env.c_str(), cache.c_str(), 1);
    }
  }
  ::testing::InitGoogleTest(&argc, argv);
  // Left out of the cpu suites: the tests that name the cpu itself (its error text, an explicit
  // cpu compile; the shared tests above are their counterparts), and the float suites when the
  // target does not compute every op at every float dtype (FloatOpsAtEveryDtype<display>Accepts
  // runs them at the dtypes it does).
  std::vector<std::string> out = {"CpuStructural.GatherOutOfRangeIsAClearError",
                                  "CpuStructural.SymbolicBatchIsBoundPerRunAndCached"};
  if (!runs_cpu_float_suites(t)) {
    out.push_back("CpuPrimitives.FloatUnaryOpsAtEveryFloatDtype");
    out.push_back("CpuPrimitives.FloatBinaryOpsAtEveryFloatDtype");
  }
  out.insert(out.end(), t.skip_cpu_tests.begin(), t.skip_cpu_tests.end());
  std::string filter = GTEST_FLAG_GET(filter);
  filter += filter.find('-') == std::string::npos ? "-" : ":";
  for (size_t i = 0; i < out.size(); ++i) filter += (i ? ":" : "") + out[i];
  GTEST_FLAG_SET(filter, filter);
  ::testing::AddGlobalTestEnvironment(new EnvironmentCheck(t.name));
  register_target_suite_tests(t);
  int rc = RUN_ALL_TESTS();
  if (!cache.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(cache, ec);
  }
  return rc;
}

}  // namespace rlx::test
