#include "digits_cnn.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "rlx/core/builder.h"
#include "rlx/core/losses.h"
#include "rlx/core/quantize.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx::cortexm::testing {

namespace {

constexpr int64_t kSide = 8, kC1 = 16, kC2 = 16, kClasses = 10, kFlat = kC2 * 2 * 2;
constexpr int kBatch = 32;

// The windows of a k x k, stride-1 convolution with `pad` over [B, C, H, W]:
// [B, C, OH * OW, k * k], gathered through a constant index table (im2col).
ValueId windows(GraphBuilder& b, ValueId x, Dim batch, int64_t c, int64_t h, int64_t w, int64_t k,
                int64_t pad) {
  if (pad)
    x = b.op("pad", {x, b.scalar(DType::kF32, 0.0)},
             {{"low", IntList{0, 0, pad, pad}}, {"high", IntList{0, 0, pad, pad}}});
  const int64_t hp = h + 2 * pad, wp = w + 2 * pad, oh = hp - k + 1, ow = wp - k + 1;
  x = b.reshape(x, Shape{batch, c, hp * wp});
  Tensor idx(DType::kI64, {oh * ow, k * k});
  int64_t* p = idx.as<int64_t>();
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t xx = 0; xx < ow; ++xx)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) *p++ = (y + i) * wp + (xx + j);
  return b.op("gather", {x, b.constant(idx)}, {{"axis", int64_t{2}}});
}

// A stride-1 'same' convolution of [B, C, H, W] to [B, O, H, W]; depthwise (O = C, one
// filter per channel) or dense over the channels.
ValueId conv(GraphBuilder& b, ValueId x, ValueId w, ValueId bias, Dim batch, int64_t c, int64_t h,
             int64_t wd, int64_t o, int64_t k, bool depthwise) {
  ValueId win = windows(b, x, batch, c, h, wd, k, k / 2);
  ValueId y;
  if (depthwise) {
    y = b.dot_general(win, b.reshape(w, Shape{c, k * k}), {1}, {0}, {3}, {1});  // [C, B, P]
    y = b.transpose(y, {1, 0, 2});
  } else {
    ValueId cols = b.reshape(b.transpose(win, {0, 2, 1, 3}), Shape{batch, h * wd, c * k * k});
    y = b.dot_general(cols, b.reshape(w, Shape{o, c * k * k}), {}, {}, {2}, {1});  // [B, P, O]
    y = b.transpose(y, {0, 2, 1});
  }
  y = b.add(y, b.broadcast_in_dim(bias, b.type(y).shape, {1}));
  return b.reshape(y, Shape{batch, o, h, wd});
}

Attrs pool2() {
  return {{"kernel_shape", IntList{2, 2}}, {"strides", IntList{2, 2}}};
}

// The float network. With labels its output is the mean cross-entropy ("loss"); without, the
// logits and then the input of each quantized layer after the first (for calibration).
Graph float_cnn(const NamedTensors& params, int64_t batch, bool with_loss) {
  Graph g;
  GraphBuilder b(g);
  const Dim n(batch);
  auto param = [&](const char* name) { return b.param(name, params.at(name)); };
  ValueId x = b.input("x", {DType::kF32, {n, 1, kSide, kSide}});
  ValueId a1 =
      b.op("Relu", {conv(b, x, param("c1.w"), param("c1.b"), n, 1, kSide, kSide, kC1, 3, false)});
  ValueId p1 = b.op("MaxPool", {a1}, pool2());
  ValueId a2 =
      b.op("Relu", {conv(b, p1, param("dw.w"), param("dw.b"), n, kC1, 4, 4, kC1, 3, true)});
  ValueId a3 = b.op(
      "Relu",
      {b.op("Add", {conv(b, a2, param("c2.w"), param("c2.b"), n, kC1, 4, 4, kC2, 3, false), p1})});
  ValueId f = b.reshape(b.op("AveragePool", {a3}, pool2()), Shape{n, kFlat});
  ValueId logits = b.op("Linear", {f, param("fc.w"), param("fc.b")});
  if (with_loss) {
    ValueId loss = softmax_cross_entropy(b, logits, b.input("labels", {DType::kI32, {n}}));
    g.values[loss].name = "loss";
    b.output(loss);
    return g;
  }
  g.values[logits].name = "logits";
  g.values[p1].name = "dw_in";
  g.values[a2].name = "c2_in";
  g.values[f].name = "fc_in";
  for (ValueId v : {logits, p1, a2, f}) b.output(v);
  return g;
}

Tensor rows_of(const Digits& d, int first, int rows) {
  Tensor t(DType::kF32, {rows, 1, kSide, kSide});
  std::copy_n(&d.x[static_cast<size_t>(first) * 64], static_cast<size_t>(rows) * 64, t.as<float>());
  return t;
}

NamedTensors run_float(const Cnn& m, const Digits& d, int first, int rows) {
  Session session(test::cpu_target());
  CompiledModel model = session.compile(float_cnn(m.params, rows, false));
  return model.run({{"x", rows_of(d, first, rows)}});
}

// One static-form quantized layer's operands: int8 weights per output channel, the activation
// range [0, hi] as u8, the f32 bias.
std::vector<ValueId> quantized(GraphBuilder& b, ValueId x, const Tensor& w, const Tensor& bias,
                               float hi) {
  const int64_t o = w.shape()[0], k = w.numel() / o;
  std::vector<int64_t> dims(w.shape().begin(), w.shape().end());
  Tensor wq(DType::kI8, dims), ws(DType::kF32, {o});
  quant::quantize_int8_rows(w.as<float>(), o, k, wq.as<int8_t>(), ws.as<float>());
  const quant::U8Params p = quant::u8_params(0.0f, hi);
  return {x,
          b.constant(wq),
          b.constant(ws),
          b.constant(Tensor::from<float>(DType::kF32, {}, {p.scale})),
          b.constant(Tensor::from<uint8_t>(DType::kU8, {}, {p.zero})),
          b.constant(bias)};
}

float max_of(const Tensor& t) {
  return *std::max_element(t.as<float>(), t.as<float>() + t.numel());
}

}  // namespace

Cnn train_cnn(const Digits& d, int train_rows) {
  Cnn m;
  std::mt19937 gen(4321);
  // He-uniform draws from the raw generator: the same numbers under any standard library.
  auto init = [&](const char* name, std::vector<int64_t> dims, int64_t fan_in) {
    Tensor t(DType::kF32, dims);
    const float a = std::sqrt(6.0f / static_cast<float>(fan_in));
    for (int64_t i = 0; i < t.numel(); ++i)
      t.as<float>()[i] = (static_cast<float>(gen()) / 4294967296.0f * 2 - 1) * a;
    m.params[name] = t;
  };
  init("c1.w", {kC1, 1, 3, 3}, 9);
  init("dw.w", {kC1, 1, 3, 3}, 9);
  init("c2.w", {kC2, kC1, 3, 3}, kC1 * 9);
  init("fc.w", {kClasses, kFlat}, kFlat);
  for (auto [name, size] :
       {std::pair{"c1.b", kC1}, {"dw.b", kC1}, {"c2.b", kC2}, {"fc.b", kClasses}})
    m.params[name] = Tensor(DType::kF32, {size});

  Trainer trainer(test::cpu_target(), float_cnn(m.params, kBatch, true),
                  parse_optimizer("adam:lr=0.01"));
  std::vector<int> order(train_rows);
  for (int i = 0; i < train_rows; ++i) order[i] = i;
  Tensor x(DType::kF32, {kBatch, 1, kSide, kSide}), labels(DType::kI32, {kBatch});
  for (int epoch = 0; epoch < 20; ++epoch) {
    for (int i = train_rows - 1; i > 0; --i) std::swap(order[i], order[gen() % (i + 1)]);
    for (int start = 0; start + kBatch <= train_rows; start += kBatch) {
      for (int r = 0; r < kBatch; ++r) {
        const int row = order[start + r];
        std::copy_n(&d.x[static_cast<size_t>(row) * 64], 64, x.as<float>() + r * 64);
        labels.as<int32_t>()[r] = d.y[row];
      }
      m.final_loss = trainer.step({{"x", x}, {"labels", labels}});
    }
  }
  for (auto& [name, t] : m.params) t = trainer.parameters().at(name).clone();
  return m;
}

std::vector<float> cnn_logits(const Cnn& m, const Digits& d, int first, int rows) {
  const Tensor logits = run_float(m, d, first, rows).at("logits");
  return std::vector<float>(logits.as<float>(), logits.as<float>() + logits.numel());
}

Graph cnn_quantized_graph(const Cnn& m, const Digits& d, int train_rows) {
  const NamedTensors act = run_float(m, d, 0, train_rows);
  const NamedTensors& p = m.params;
  Graph g;
  GraphBuilder b(g);
  ValueId y = b.input("x", {DType::kF32, {1, 1, kSide, kSide}});
  const Attrs same{{"pads", IntList{1, 1, 1, 1}}};
  y = b.op("QConv", quantized(b, y, p.at("c1.w"), p.at("c1.b"), 1.0f), same);
  const ValueId skip = b.op("MaxPool", {b.op("Relu", {y})}, pool2());
  Attrs depthwise = same;
  depthwise["group"] = kC1;
  y = b.op("QConv", quantized(b, skip, p.at("dw.w"), p.at("dw.b"), max_of(act.at("dw_in"))),
           depthwise);
  y = b.op("Relu", {y});
  y = b.op("QConv", quantized(b, y, p.at("c2.w"), p.at("c2.b"), max_of(act.at("c2_in"))), same);
  y = b.op("Relu", {b.op("Add", {y, skip})});
  y = b.op("AveragePool", {y}, pool2());
  y = b.reshape(y, Shape{1, kFlat});
  y = b.op("QMatMul", quantized(b, y, p.at("fc.w"), p.at("fc.b"), max_of(act.at("fc_in"))));
  b.output(y);
  return g;
}

}  // namespace rlx::cortexm::testing
