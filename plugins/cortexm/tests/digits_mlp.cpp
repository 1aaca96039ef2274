#include "digits_mlp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>

#include "rlx/core/builder.h"
#include "rlx/core/quantize.h"

namespace rlx::cortexm::testing {

Digits load_digits(const std::string& gz_file) {
  Digits d;
  FILE* pipe = popen(fmt::format("gzip -dc '{}'", gz_file).c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run gzip on " + gz_file);
  std::string text;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) text.append(buf, n);
  pclose(pipe);
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::stringstream l(line);
    std::vector<int> v;
    for (std::string cell; std::getline(l, cell, ',');) v.push_back(std::stoi(cell));
    if (v.size() != 65) throw std::runtime_error("digits: a row without 65 values");
    for (int i = 0; i < 64; ++i) d.x.push_back(static_cast<float>(v[i]) / 16.0f);
    d.y.push_back(v[64]);
    ++d.n;
  }
  return d;
}

std::vector<float> Mlp::forward(const float* x, std::vector<float>* hidden_out) const {
  std::vector<float> h(hidden), o(out);
  for (int j = 0; j < hidden; ++j) {
    float s = b1[j];
    for (int i = 0; i < in; ++i) s += w1[j * in + i] * x[i];
    h[j] = std::max(s, 0.0f);
  }
  for (int j = 0; j < out; ++j) {
    float s = b2[j];
    for (int i = 0; i < hidden; ++i) s += w2[j * hidden + i] * h[i];
    o[j] = s;
  }
  if (hidden_out) *hidden_out = h;
  return o;
}

Mlp train_mlp(const Digits& d, int train_rows) {
  Mlp m;
  std::mt19937 gen(1234);
  // Uniform in [-a, a] from the raw generator, so the run is the same under any standard library.
  auto uniform = [&](float a) { return (static_cast<float>(gen()) / 4294967296.0f * 2 - 1) * a; };
  m.w1.resize(m.hidden * m.in);
  m.w2.resize(m.out * m.hidden);
  m.b1.assign(m.hidden, 0);
  m.b2.assign(m.out, 0);
  for (float& w : m.w1) w = uniform(std::sqrt(6.0f / m.in));
  for (float& w : m.w2) w = uniform(std::sqrt(6.0f / m.hidden));
  std::vector<int> order(train_rows);
  for (int i = 0; i < train_rows; ++i) order[i] = i;
  const float lr = 0.05f;
  std::vector<float> h, g_out(m.out), g_h(m.hidden);
  for (int epoch = 0; epoch < 30; ++epoch) {
    for (int i = train_rows - 1; i > 0; --i) std::swap(order[i], order[gen() % (i + 1)]);
    for (int r : order) {
      const float* x = &d.x[static_cast<size_t>(r) * m.in];
      std::vector<float> o = m.forward(x, &h);
      const float top = *std::max_element(o.begin(), o.end());
      float sum = 0;
      for (float& v : o) sum += (v = std::exp(v - top));
      for (int j = 0; j < m.out; ++j) g_out[j] = o[j] / sum - (j == d.y[r] ? 1.0f : 0.0f);
      for (int i = 0; i < m.hidden; ++i) {
        float s = 0;
        for (int j = 0; j < m.out; ++j) s += g_out[j] * m.w2[j * m.hidden + i];
        g_h[i] = h[i] > 0 ? s : 0;
      }
      for (int j = 0; j < m.out; ++j) {
        for (int i = 0; i < m.hidden; ++i) m.w2[j * m.hidden + i] -= lr * g_out[j] * h[i];
        m.b2[j] -= lr * g_out[j];
      }
      for (int j = 0; j < m.hidden; ++j) {
        for (int i = 0; i < m.in; ++i) m.w1[j * m.in + i] -= lr * g_h[j] * x[i];
        m.b1[j] -= lr * g_h[j];
      }
    }
  }
  return m;
}

namespace {

TensorType type_of(DType dt, std::vector<int64_t> dims) {
  Shape s;
  for (int64_t v : dims) s.push_back(Dim(v));
  return TensorType{dt, s};
}

// One static-form QMatMul: int8 weights per row, the activation range [lo, hi] as u8.
ValueId qlinear(GraphBuilder& b, ValueId x, const std::vector<float>& w,
                const std::vector<float>& bias, int n, int k, float lo, float hi) {
  Tensor wq(DType::kI8, {n, k}), ws(DType::kF32, {n});
  quant::quantize_int8_rows(w.data(), n, k, wq.as<int8_t>(), ws.as<float>());
  const quant::U8Params p = quant::u8_params(lo, hi);
  Tensor xs = Tensor::from<float>(DType::kF32, {}, {p.scale});
  Tensor xz = Tensor::from<uint8_t>(DType::kU8, {}, {p.zero});
  Tensor bt = Tensor::from<float>(DType::kF32, {n}, bias);
  return b.op("QMatMul",
              {x, b.constant(wq), b.constant(ws), b.constant(xs), b.constant(xz), b.constant(bt)});
}

}  // namespace

Graph quantized_graph(const Mlp& m, const Digits& d, int train_rows, bool softmax, float clip) {
  float hidden_max = 0;
  std::vector<float> h;
  for (int r = 0; r < train_rows; ++r) {
    m.forward(&d.x[static_cast<size_t>(r) * m.in], &h);
    hidden_max = std::max(hidden_max, *std::max_element(h.begin(), h.end()));
  }
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", type_of(DType::kF32, {1, m.in}));
  ValueId y = qlinear(b, x, m.w1, m.b1, m.hidden, m.in, 0.0f, 1.0f);
  y = b.op("Relu", {y});
  if (clip > 0) y = b.op("Clip", {y}, {{"min", 0.0}, {"max", static_cast<double>(clip)}});
  y = qlinear(b, y, m.w2, m.b2, m.out, m.hidden, 0.0f, hidden_max);
  if (softmax) y = b.op("Softmax", {y});
  b.output(y);
  return g;
}

Graph float_graph(const Mlp& m) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", type_of(DType::kF32, {1, m.in}));
  Tensor w = Tensor::from<float>(DType::kF32, {m.in, m.hidden}, [&] {
    std::vector<float> t(m.in * m.hidden);
    for (int j = 0; j < m.hidden; ++j)
      for (int i = 0; i < m.in; ++i) t[i * m.hidden + j] = m.w1[j * m.in + i];
    return t;
  }());
  b.output(b.op("MatMul", {x, b.constant(w)}));
  return g;
}

}  // namespace rlx::cortexm::testing
