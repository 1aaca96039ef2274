// Gradients through c64 values against central finite differences of the same function written
// with std::complex<double> here. The cotangent of z = x + iy is dL/dx + i dL/dy (PyTorch's
// convention), so each element's reference is two real differences. rlx computes in c64 (two
// f32): the tolerance is f32's.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <complex>
#include <functional>

#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx {
namespace {

using Cd = std::complex<double>;
using Loss = std::function<double(const std::vector<Cd>& z, const std::vector<Cd>& w)>;

Tensor c64(const std::vector<Cd>& v) {
  Tensor t(DType::kC64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i)
    t.as<float>()[2 * i] = static_cast<float>(v[i].real()),
                      t.as<float>()[2 * i + 1] = static_cast<float>(v[i].imag());
  return t;
}

ValueId named(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].name == name) return static_cast<ValueId>(i);
  throw std::runtime_error("no value " + name);
}

// `body` computes %loss (f32[]) from %z and %w (c64[n]); its gradient for both inputs must equal
// the finite differences of `reference`.
void check(const std::string& body, const std::vector<Cd>& z, const std::vector<Cd>& w,
           const Loss& reference, double tol = 2e-4) {
  const std::string ir = fmt::format(
      "graph @t(%z: c64[{0}], %w: c64[{0}]) {{\n{1}  return %loss\n}}\n", z.size(), body);
  SCOPED_TRACE(ir);
  Graph g = decompose_to_mir(parse_graph(ir));
  std::vector<ValueId> grads =
      append_gradients(g, named(g, "loss"), {named(g, "z"), named(g, "w")});
  g.values[grads[0]].name = "dz", g.values[grads[1]].name = "dw";
  g.outputs = {named(g, "loss"), grads[0], grads[1]};
  Session session(test::cpu_target());
  NamedTensors out = session.compile(g).run({{"z", c64(z)}, {"w", c64(w)}});
  EXPECT_NEAR(out.at("loss").as<float>()[0], reference(z, w),
              tol * (1 + std::abs(reference(z, w))));
  const double h = 1e-6;
  for (int which = 0; which < 2; ++which) {
    const std::vector<Cd>& at = which ? w : z;
    const float* got = out.at(which ? "dw" : "dz").as<float>();
    for (size_t k = 0; k < at.size(); ++k)
      for (int part = 0; part < 2; ++part) {
        std::vector<Cd> up = at, down = at;
        const Cd step = part ? Cd(0, h) : Cd(h, 0);
        up[k] += step, down[k] -= step;
        const double want = which ? (reference(z, up) - reference(z, down)) / (2 * h)
                                  : (reference(up, w) - reference(down, w)) / (2 * h);
        EXPECT_NEAR(got[2 * k + part], want, tol * (1 + std::abs(want)))
            << (which ? "dw" : "dz") << "[" << k << "]." << (part ? "imag" : "real");
      }
  }
}

const std::vector<Cd> kZ = {{0.5, -1.25}, {1.5, 0.5}, {-0.75, 0.75}, {0.25, 1.5}};
const std::vector<Cd> kW = {{1.0, 0.5}, {-0.5, 0.25}, {0.25, -1.0}, {0.75, 0.6}};

double sum_of(const std::vector<Cd>& v, const std::function<double(Cd, size_t)>& f) {
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += f(v[i], i);
  return s;
}

TEST(ComplexGradients, ArithmeticAndMagnitude) {
  check(R"(  %m = Mul(%z, %w) : c64[4]
  %d = Div(%m, %w) : c64[4]
  %s = Sub(%d, %z) : c64[4]
  %a = Add(%s, %m) : c64[4]
  %n = Abs(%a) : f32[4]
  %loss = reduce_sum(%n) {axes = [0]} : f32[]
)",
        kZ, kW, [](const std::vector<Cd>& z, const std::vector<Cd>& w) {
          return sum_of(z,
                        [&](Cd v, size_t i) { return std::abs(v * w[i] / w[i] - v + v * w[i]); });
        });
}

TEST(ComplexGradients, Transcendentals) {
  check(R"(  %e = Exp(%z) : c64[4]
  %l = Log(%w) : c64[4]
  %r = Sqrt(%z) : c64[4]
  %t = Tanh(%w) : c64[4]
  %p = Pow(%z, %w) : c64[4]
  %s1 = sin(%z) : c64[4]
  %el = Mul(%e, %l) : c64[4]
  %rt = Add(%r, %t) : c64[4]
  %ps = Sub(%p, %s1) : c64[4]
  %x = Mul(%el, %rt) : c64[4]
  %y = Add(%x, %ps) : c64[4]
  %re = Real(%y) : f32[4]
  %im = Imag(%y) : f32[4]
  %both = Mul(%re, %im) : f32[4]
  %loss = reduce_sum(%both) {axes = [0]} : f32[]
)",
        kZ, kW,
        [](const std::vector<Cd>& z, const std::vector<Cd>& w) {
          return sum_of(z, [&](Cd v, size_t i) {
            const Cd y = std::exp(v) * std::log(w[i]) * (std::sqrt(v) + std::tanh(w[i])) +
                         std::pow(v, w[i]) - std::sin(v);
            return y.real() * y.imag();
          });
        },
        1e-3);
}

// The parts: Conj, Complex(re, im) and a cast to f32 (the real part) and back.
TEST(ComplexGradients, PartsConjugatesAndCasts) {
  check(R"(  %c = Conj(%z) : c64[4]
  %m = Mul(%c, %w) : c64[4]
  %re = Real(%w) : f32[4]
  %im = Imag(%z) : f32[4]
  %k = Complex(%im, %re) : c64[4]
  %s = Add(%m, %k) : c64[4]
  %f = convert(%s) {dtype = f32} : f32[4]
  %g = convert(%f) {dtype = c64} : c64[4]
  %h = Mul(%g, %s) : c64[4]
  %n = Abs(%h) : f32[4]
  %loss = reduce_sum(%n) {axes = [0]} : f32[]
)",
        kZ, kW, [](const std::vector<Cd>& z, const std::vector<Cd>& w) {
          return sum_of(z, [&](Cd v, size_t i) {
            const Cd s = std::conj(v) * w[i] + Cd(v.imag(), w[i].real());
            return std::abs(Cd(s.real(), 0) * s);
          });
        });
}

// dot_general (a matrix product of 2 x 2 views) and a product along an axis.
TEST(ComplexGradients, ProductsAndReductions) {
  check(R"(  %a = Reshape(%z) {shape = [2, 2]} : c64[2,2]
  %b = Reshape(%w) {shape = [2, 2]} : c64[2,2]
  %p = MatMul(%a, %b) : c64[2,2]
  %q = reduce_prod(%p) {axes = [1]} : c64[2]
  %n = Abs(%q) : f32[2]
  %loss = reduce_sum(%n) {axes = [0]} : f32[]
)",
        kZ, kW, [](const std::vector<Cd>& z, const std::vector<Cd>& w) {
          double loss = 0;
          for (int i = 0; i < 2; ++i) {
            Cd prod = 1;
            for (int j = 0; j < 2; ++j) prod *= z[2 * i] * w[j] + z[2 * i + 1] * w[2 + j];
            loss += std::abs(prod);
          }
          return loss;
        });
}

// Gradients of c64 parameters exist, but the optimizers' updates are written for real values:
// training one is refused by name, never updated wrongly.
TEST(ComplexGradients, TrainingAComplexParameterIsRefusedByName) {
  Graph g;
  GraphBuilder b(g);
  ValueId p = b.param("phase", c64(kZ));
  ValueId n = b.op("Abs", {p});
  ValueId loss = b.op("reduce_sum", {n}, {{"axes", IntList{0}}});
  g.outputs.push_back(loss);
  try {
    build_training_graph(g, OptimizerConfig{});
    FAIL() << "a c64 parameter was trained";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("%phase is c64[4]; the optimizers update real parameters only"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rlx
