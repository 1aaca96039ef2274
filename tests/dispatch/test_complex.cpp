// c64 end to end on the cpu target: every op the split-complex rewrite covers against
// std::complex<double>, the native cgemm product and the same product on real parts, casts, the
// views left after canonicalisation, and refusals that name the op.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <complex>

#include "rlx/core/dispatch.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/passes.h"
#include "test_support.h"

namespace rlx {
namespace {

using C = std::complex<float>;
using Cd = std::complex<double>;

Tensor c64(std::vector<int64_t> shape, const std::vector<C>& v) {
  Tensor t(DType::kC64, std::move(shape));
  std::copy(v.begin(), v.end(), t.as<C>());
  return t;
}

std::vector<C> complex_values(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::kC64);
  return std::vector<C>(t.as<C>(), t.as<C>() + t.numel());
}

void expect_near(const std::vector<C>& got, const std::vector<Cd>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double scale = tol * (1 + std::abs(want[i]));
    EXPECT_NEAR(got[i].real(), want[i].real(), scale)
        << what << " element " << i << " of " << want[i];
    EXPECT_NEAR(got[i].imag(), want[i].imag(), scale)
        << what << " element " << i << " of " << want[i];
  }
}

// Operands away from branch cuts and zeros, plus values whose squares overflow f32 (Smith's
// division and the scaled magnitude keep them finite).
const std::vector<C> kA = {{0.5f, -1.25f}, {2.0f, 0.5f},   {-1.5f, 0.75f}, {0.125f, 3.0f},
                           {-4.0f, 0.25f}, {3e30f, 4e30f}, {1e30f, 1e30f}, {-0.75f, -2.0f}};
const std::vector<C> kB = {{1.0f, 2.0f},   {-0.5f, 0.25f}, {0.25f, -1.0f}, {3.0f, 1.0f},
                           {-2.0f, -0.5f}, {1.0f, 0.5f},   {1e30f, 1e30f}, {0.5f, 0.5f}};

TEST(Complex, ElementwiseOpsMatchStdComplex) {
  const char* ir = R"(graph @t(%a: c64[8], %b: c64[8]) {
  %add = Add(%a, %b) : c64[8]
  %sub = Sub(%a, %b) : c64[8]
  %mul = Mul(%a, %b) : c64[8]
  %div = Div(%a, %b) : c64[8]
  %neg = Neg(%a) : c64[8]
  %conj = Conj(%a) : c64[8]
  %abs = Abs(%a) : f32[8]
  %re = Real(%a) : f32[8]
  %im = Imag(%a) : f32[8]
  %back = Complex(%im, %re) : c64[8]
  %eq = eq(%a, %a) : bool[8]
  %ne = ne(%a, %b) : bool[8]
  return %add, %sub, %mul, %div, %neg, %conj, %abs, %re, %im, %back, %eq, %ne
}
)";
  NamedTensors out = test::run_text(ir, {{"a", c64({8}, kA)}, {"b", c64({8}, kB)}});
  std::vector<Cd> add, sub, mul, div, neg, conj, back;
  for (size_t i = 0; i < kA.size(); ++i) {
    const Cd a(kA[i]), b(kB[i]);
    add.push_back(a + b), sub.push_back(a - b), mul.push_back(a * b), div.push_back(a / b);
    neg.push_back(-a), conj.push_back(std::conj(a)), back.push_back({a.imag(), a.real()});
    EXPECT_NEAR(out.at("abs").as<float>()[i], std::abs(a), 1e-6 * std::abs(a)) << "abs " << a;
    EXPECT_EQ(out.at("re").as<float>()[i], kA[i].real());
    EXPECT_EQ(out.at("im").as<float>()[i], kA[i].imag());
    EXPECT_TRUE(out.at("eq").as<bool>()[i]);
    EXPECT_EQ(out.at("ne").as<bool>()[i], kA[i] != kB[i]) << i;
  }
  // Products of the 1e30 operands overflow f32 in any formula; the others are checked.
  mul.resize(5), add.resize(5);
  auto head = [](const Tensor& t, size_t n) {
    std::vector<C> v = complex_values(t);
    v.resize(n);
    return v;
  };
  expect_near(head(out.at("add"), 5), add, 1e-6, "add");
  expect_near(complex_values(out.at("sub")), sub, 1e-6, "sub");
  expect_near(head(out.at("mul"), 5), mul, 1e-6, "mul");
  expect_near(complex_values(out.at("div")), div, 1e-6, "div");
  expect_near(complex_values(out.at("neg")), neg, 0, "neg");
  expect_near(complex_values(out.at("conj")), conj, 0, "conj");
  expect_near(complex_values(out.at("back")), back, 0, "complex");
}

TEST(Complex, TranscendentalsMatchStdComplex) {
  const char* ir = R"(graph @t(%a: c64[7], %b: c64[7]) {
  %exp = Exp(%a) : c64[7]
  %log = Log(%a) : c64[7]
  %sqrt = Sqrt(%a) : c64[7]
  %sin = sin(%a) : c64[7]
  %cos = cos(%a) : c64[7]
  %pow = Pow(%a, %b) : c64[7]
  %tanh = Tanh(%a) : c64[7]
  %sigmoid = Sigmoid(%b) : c64[7]
  return %exp, %log, %sqrt, %sin, %cos, %pow, %tanh, %sigmoid
}
)";
  // Every quadrant, the negative real axis (sqrt's and log's cut, approached from above).
  const std::vector<C> a = {{0.5f, -1.25f}, {2.0f, 0.5f},    {-1.5f, 0.75f}, {0.125f, 3.0f},
                            {-4.0f, 0.0f},  {-0.75f, -2.0f}, {1e-3f, 1e-3f}};
  const std::vector<C> b = {{1.0f, 0.5f}, {-0.5f, 0.25f}, {0.25f, -1.0f}, {2.0f, 0.0f},
                            {0.5f, 0.0f}, {0.0f, 0.0f},   {1.5f, -0.5f}};
  NamedTensors out = test::run_text(ir, {{"a", c64({7}, a)}, {"b", c64({7}, b)}});
  std::vector<Cd> exp, log, sqrt, sin, cos, pow, tanh, sigmoid;
  for (size_t i = 0; i < a.size(); ++i) {
    const Cd x(a[i]), y(b[i]);
    exp.push_back(std::exp(x)), log.push_back(std::log(x)), sqrt.push_back(std::sqrt(x));
    sin.push_back(std::sin(x)), cos.push_back(std::cos(x)), pow.push_back(std::pow(x, y));
    tanh.push_back(std::tanh(x)), sigmoid.push_back(1.0 / (1.0 + std::exp(-y)));
  }
  expect_near(complex_values(out.at("exp")), exp, 2e-6, "exp");
  expect_near(complex_values(out.at("log")), log, 1e-6, "log");
  expect_near(complex_values(out.at("sqrt")), sqrt, 1e-6, "sqrt");
  expect_near(complex_values(out.at("sin")), sin, 2e-6, "sin");
  expect_near(complex_values(out.at("cos")), cos, 2e-6, "cos");
  expect_near(complex_values(out.at("pow")), pow, 1e-5, "pow");
  expect_near(complex_values(out.at("tanh")), tanh, 2e-6, "tanh");
  expect_near(complex_values(out.at("sigmoid")), sigmoid, 2e-6, "sigmoid");
}

// tanh and the logistic function far out on the real axis, where cosh 2a and exp(-z) overflow
// f32, and at a pole of tanh's imaginary part (b = pi/2 at a = 0 is infinite; next to it, large).
TEST(Complex, TanhAndSigmoidStayFiniteFarOut) {
  const std::vector<C> a = {{60.0f, 1.0f}, {-60.0f, -2.5f}, {-100.0f, 0.5f}, {0.0f, 1.5f}};
  NamedTensors out = test::run_text(R"(graph @t(%a: c64[4]) {
  %tanh = Tanh(%a) : c64[4]
  %sigmoid = Sigmoid(%a) : c64[4]
  return %tanh, %sigmoid
}
)",
                                    {{"a", c64({4}, a)}});
  std::vector<Cd> tanh, sigmoid;
  for (const C& v : a) {
    const Cd x(v);
    tanh.push_back(std::tanh(x)), sigmoid.push_back(1.0 / (1.0 + std::exp(-x)));
  }
  expect_near(complex_values(out.at("tanh")), tanh, 2e-6, "tanh");
  expect_near(complex_values(out.at("sigmoid")), sigmoid, 2e-6, "sigmoid");
}

TEST(Complex, SumsAndProductsAlongAxes) {
  const char* ir = R"(graph @t(%x: c64[3,5]) {
  %rows = reduce_sum(%x) {axes = [1]} : c64[3]
  %prod = reduce_prod(%x) {axes = [1]} : c64[3]
  %cols = reduce_prod(%x) {axes = [0]} : c64[5]
  return %rows, %prod, %cols
}
)";
  std::vector<C> x;
  for (int i = 0; i < 15; ++i) x.push_back({0.9f + 0.02f * i, 0.3f - 0.05f * i});
  NamedTensors out = test::run_text(ir, {{"x", c64({3, 5}, x)}});
  std::vector<Cd> rows(3), prod(3, 1.0), cols(5, 1.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      rows[i] += Cd(x[i * 5 + j]), prod[i] *= Cd(x[i * 5 + j]), cols[j] *= Cd(x[i * 5 + j]);
    }
  expect_near(complex_values(out.at("rows")), rows, 1e-6, "reduce_sum");
  expect_near(complex_values(out.at("prod")), prod, 1e-6, "reduce_prod over 5");
  expect_near(complex_values(out.at("cols")), cols, 1e-6, "reduce_prod over 3");
}

// The cpu target without its complex products: dispatch then takes the MatMul apart into real
// products, the path every target without cgemm takes.
std::shared_ptr<Target> cpu_without_complex_products() {
  return test::cpu_refusing([](const NodeSignature& s, bool native) -> std::optional<std::string> {
    bool c64 = false;
    for (const auto* l : {&s.inputs, &s.outputs})
      for (const TensorType& t : *l) c64 |= t.dtype == DType::kC64;
    if (c64 && s.op == (native ? "MatMul" : "dot_general")) return "the test takes " + s.op + " apart";
    return std::nullopt;
  });
}

TEST(Complex, MatMulRunsOnCgemmAndOnRealProducts) {
  const char* ir = R"(graph @t(%a: c64[2,3,4], %b: c64[4,5]) {
  %y = MatMul(%a, %b) : c64[2,3,5]
  return %y
}
)";
  std::vector<C> a, b;
  for (int i = 0; i < 24; ++i) a.push_back({0.1f * (i % 7) - 0.3f, 0.05f * (i % 5)});
  for (int i = 0; i < 20; ++i) b.push_back({0.2f - 0.03f * i, 0.1f * (i % 3) - 0.1f});
  std::vector<Cd> want(30);
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j)
        for (int k = 0; k < 4; ++k)
          want[(n * 3 + i) * 5 + j] += Cd(a[(n * 3 + i) * 4 + k]) * Cd(b[k * 5 + j]);
  NamedTensors in = {{"a", c64({2, 3, 4}, a)}, {"b", c64({4, 5}, b)}};

  auto cpu = test::cpu_target();
  DispatchResult native = dispatch(parse_graph(ir), *cpu);
  EXPECT_EQ(native.report.entries[0].path, LoweringPath::kNative);
  EXPECT_EQ(native.report.entries[0].detail, "c64 through OpenBLAS cgemm");
  expect_near(complex_values(test::run_text(ir, in, cpu).at("y")), want, 1e-6, "cgemm");

  auto parts = cpu_without_complex_products();
  DispatchResult split = dispatch(parse_graph(ir), *parts);
  EXPECT_EQ(split.report.entries[0].path, LoweringPath::kRewritten);
  EXPECT_EQ(split.report.entries[0].detail, "split-complex");
  expect_near(complex_values(test::run_text(ir, in, parts).at("y")), want, 1e-6, "real products");
}

TEST(Complex, CastsToAndFromRealTypes) {
  const char* ir = R"(graph @t(%x: f32[3], %i: i32[3], %z: c64[3]) {
  %xc = Cast(%x) {dtype = c64} : c64[3]
  %ic = Cast(%i) {dtype = c64} : c64[3]
  %zr = Cast(%z) {dtype = f32} : f32[3]
  %zd = Cast(%z) {dtype = f64} : f64[3]
  return %xc, %ic, %zr, %zd
}
)";
  NamedTensors out =
      test::run_text(ir, {{"x", test::f32({3}, {1.5f, -2.0f, 0.25f})},
                          {"i", Tensor::from<int32_t>(DType::kI32, {3}, {7, -3, 0})},
                          {"z", c64({3}, {{1.5f, 9.0f}, {-2.0f, 1.0f}, {0.25f, -4.0f}})}});
  expect_near(complex_values(out.at("xc")), {{1.5, 0}, {-2.0, 0}, {0.25, 0}}, 0, "f32 -> c64");
  expect_near(complex_values(out.at("ic")), {{7, 0}, {-3, 0}, {0, 0}}, 0, "i32 -> c64");
  // A complex value cast to a real type keeps its real part (numpy's astype, C's conversion).
  EXPECT_EQ(test::values(out.at("zr")), (std::vector<double>{1.5, -2.0, 0.25}));
  EXPECT_EQ(test::values(out.at("zd")), (std::vector<double>{1.5, -2.0, 0.25}));
}

// Between split nodes nothing is put together and taken apart again: the only views left are
// those of the program's c64 inputs and output.
TEST(Complex, AChainOfOpsKeepsOnlyTheBoundaryViews) {
  Graph g = parse_graph(R"(graph @t(%a: c64[16], %b: c64[16]) {
  %p = Mul(%a, %b) : c64[16]
  %s = Add(%p, %a) : c64[16]
  %e = Exp(%s) : c64[16]
  %t = Transpose(%e) {perm = [0]} : c64[16]
  return %t
}
)");
  DispatchResult r = dispatch(g, *test::cpu_target());
  run_default_passes(r.graph);
  int views = 0, concats = 0;
  for (const Node& n : r.graph.nodes) views += n.op == "bitcast", concats += n.op == "concat";
  EXPECT_EQ(views, 3) << print_graph(r.graph);
  EXPECT_EQ(concats, 1) << print_graph(r.graph);
}

TEST(Complex, OpsWithoutAComplexFormAreRefusedByName) {
  std::string msg = test::compile_error(R"(graph @t(%a: c64[4]) {
  %y = erf(%a) : c64[4]
  return %y
}
)",
                                        test::cpu_target());
  EXPECT_NE(msg.find("split-complex has no complex form of erf"), std::string::npos) << msg;
  try {
    parse_graph(R"(graph @t(%a: c64[4]) {
  %y = reduce_max(%a) {axes = [0]} : c64[]
  return %y
}
)");
    FAIL() << "reduce_max of c64 parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("complex numbers have no order"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx
