// FakeQuantize: its values against hand-computed ones (per tensor and per channel, rounding half
// to even, clamping), its straight-through gradients, and quantization-aware training: a linear
// layer trained through fake-quantized weights and activations, whose int8 form (the trained
// weights rounded to int8 with the same scales, run by the cpu's QMatMul) gives the outputs the
// fake-quantized model gives.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rlx/core/autodiff.h"
#include "rlx/core/builder.h"
#include "rlx/core/error.h"
#include "rlx/core/runtime.h"
#include "rlx/core/trainer.h"
#include "test_support.h"

namespace rlx {
namespace {

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) {
  return Tensor::from<float>(DType::kF32, std::move(shape), std::move(v));
}

ValueId fake_quantize(GraphBuilder& b, ValueId x, ValueId scale, ValueId zero, int64_t qmin,
                      int64_t qmax, const std::string& gradient = "clipped", int64_t axis = 0) {
  return b.op("FakeQuantize", {x, scale, zero},
              {{"qmin", qmin}, {"qmax", qmax}, {"axis", axis}, {"gradient", gradient}});
}

TEST(FakeQuantize, ValuesRoundHalfToEvenAndClamp) {
  // scale 0.25, zero 1, grid [-4, 3]: q = clamp(round(4x) + 1, -4, 3), y = (q - 1) / 4.
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {8}});
  b.output(fake_quantize(b, x, b.scalar(DType::kF32, 0.25), b.scalar(DType::kF32, 1.0), -4, 3));
  Session s(test::cpu_target());
  Tensor y = s.compile(g)
                 .run({{"x", f32({8}, {-1.0f, -0.26f, 0.0f, 0.13f, 0.125f, 0.375f, 0.5f, 2.0f})}})
                 .begin()
                 ->second;
  // 4x: -4, -1.04, 0, 0.52, 0.5 (even: 0), 1.5 (even: 2), 2, 8 (clamped to q = 3).
  const float want[] = {-1.0f, -0.25f, 0.0f, 0.25f, 0.0f, 0.5f, 0.5f, 0.5f};
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(y.as<float>()[i], want[i]) << i;
}

TEST(FakeQuantize, PerChannelScalesFollowTheAxis) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {2, 3}});
  ValueId scale = b.constant(f32({3}, {1.0f, 0.5f, 0.1f}));
  ValueId zero = b.constant(f32({3}, {0.0f, 0.0f, 0.0f}));
  b.output(fake_quantize(b, x, scale, zero, -127, 127, "clipped", 1));
  Session s(test::cpu_target());
  Tensor y = s.compile(g)
                 .run({{"x", f32({2, 3}, {0.7f, 0.7f, 0.7f, -2.2f, -2.2f, 20.0f})}})
                 .begin()
                 ->second;
  const float want[] = {1.0f, 0.5f, 0.7f, -2.0f, -2.0f, 12.7f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(y.as<float>()[i], want[i], 1e-6) << i;
}

TEST(FakeQuantize, BadAttributesAreRefusedByName) {
  Graph g;
  GraphBuilder b(g);
  ValueId x = b.input("x", {DType::kF32, {4}});
  EXPECT_THROW(fake_quantize(b, x, b.scalar(DType::kF32, 1), b.scalar(DType::kF32, 0), 5, 5),
               Error);
  EXPECT_THROW(
      fake_quantize(b, x, b.scalar(DType::kF32, 1), b.scalar(DType::kF32, 0), 0, 5, "sigmoid"),
      Error);
  EXPECT_THROW(b.op("FakeQuantize", {x, b.scalar(DType::kF64, 1), b.scalar(DType::kF64, 0)}),
               Error);
}

// loss = sum(FakeQuantize(x) * w): dx is w where the value was not clamped ("clipped") or
// everywhere ("identity"), never the zero of the rounding inside.
TEST(FakeQuantize, StraightThroughGradients) {
  for (const char* mode : {"clipped", "identity"}) {
    SCOPED_TRACE(mode);
    Graph g;
    GraphBuilder b(g);
    ValueId x = b.input("x", {DType::kF32, {4}});
    ValueId y =
        fake_quantize(b, x, b.scalar(DType::kF32, 0.5), b.scalar(DType::kF32, 0.0), -2, 2, mode);
    ValueId w = b.constant(f32({4}, {1.0f, 2.0f, 3.0f, 4.0f}));
    ValueId loss = b.reduce(b.mul(y, w), {0}, ReduceKind::kSum);
    g.values[loss].name = "loss";
    g.outputs.push_back(loss);
    ValueId dx = append_gradients(g, loss, {x})[0];
    g.values[dx].name = "dx";
    g.outputs.push_back(dx);
    Session s(test::cpu_target());
    // x / 0.5: 0.2, -1.4, 3 (clamped to 2), -5 (clamped to -2).
    NamedTensors out = s.compile(g).run({{"x", f32({4}, {0.1f, -0.7f, 1.5f, -2.5f})}});
    const bool clipped = std::string(mode) == "clipped";
    const float want[] = {1.0f, 2.0f, clipped ? 0.0f : 3.0f, clipped ? 0.0f : 4.0f};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.at("dx").as<float>()[i], want[i]) << i;
  }
}

// Quantization-aware training of y = FQ(x) FQ(W)^T + b (activations u8-style on [0, 255] with a
// zero point, weights symmetric per output channel on [-127, 127], the grids QMatMul's int8
// static form uses), then the int8 form: W rounded once with the same scales, run by QMatMul.
TEST(FakeQuantize, QuantizationAwareTrainingAndItsInt8Form) {
  constexpr int64_t kIn = 6, kOut = 3, kSamples = 64;
  const float x_scale = 2.0f / 255.0f, x_zero = 128.0f;
  const std::vector<float> w_scale = {0.02f, 0.015f, 0.01f};
  auto model = [&](GraphBuilder& b, ValueId x, ValueId w, ValueId bias) {
    ValueId qx =
        fake_quantize(b, x, b.scalar(DType::kF32, x_scale), b.scalar(DType::kF32, x_zero), 0, 255);
    ValueId qw = fake_quantize(b, w, b.constant(f32({kOut}, w_scale)),
                               b.constant(f32({kOut}, {0, 0, 0})), -127, 127, "clipped", 0);
    return b.op("Linear", {qx, qw, bias});
  };
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor x(DType::kF32, {kSamples, kIn}), target(DType::kF32, {kSamples, kOut});
  const float true_w[kOut][kIn] = {{0.9f, -0.4f, 0.3f, 0.0f, 0.5f, -1.1f},
                                   {-0.2f, 0.8f, 0.1f, -0.6f, 0.4f, 0.2f},
                                   {0.05f, 0.1f, -0.3f, 0.45f, -0.25f, 0.6f}};
  for (int64_t i = 0; i < kSamples; ++i)
    for (int64_t o = 0; o < kOut; ++o) {
      float t = 0.1f * static_cast<float>(o);
      for (int64_t k = 0; k < kIn; ++k) {
        if (o == 0) x.as<float>()[i * kIn + k] = u(rng);
        t += true_w[o][k] * x.as<float>()[i * kIn + k];
      }
      target.as<float>()[i * kOut + o] = t;
    }

  Graph g;
  GraphBuilder b(g);
  ValueId xi = b.input("x", {DType::kF32, {Dim::symbol("B"), Dim(kIn)}});
  ValueId ti = b.input("t", {DType::kF32, {Dim::symbol("B"), Dim(kOut)}});
  ValueId w = b.param("w", Tensor(DType::kF32, {kOut, kIn}));
  ValueId bias = b.param("b", Tensor(DType::kF32, {kOut}));
  ValueId d = b.sub(model(b, xi, w, bias), ti);
  ValueId loss = b.reduce(b.mul(d, d), {0, 1}, ReduceKind::kSum);
  b.output(loss);
  Trainer trainer(test::cpu_target(), g, parse_optimizer("sgd:lr=0.01,momentum=0.9"));
  const double first = trainer.step({{"x", x}, {"t", target}});
  double last = first;
  for (int s = 0; s < 300; ++s) last = trainer.step({{"x", x}, {"t", target}});
  EXPECT_LT(last, 0.01 * first) << "first " << first << " last " << last;

  // The fake-quantized model with the trained parameters...
  const Tensor& tw = trainer.parameters().at("w");
  const Tensor& tb = trainer.parameters().at("b");
  Graph fq;
  GraphBuilder fb(fq);
  ValueId fx = fb.input("x", {DType::kF32, {kSamples, kIn}});
  fb.output(model(fb, fx, fb.constant(tw), fb.constant(tb)));
  Session s(test::cpu_target());
  Tensor want = s.compile(fq).run({{"x", x}}).begin()->second;
  // ... and its int8 form: the weights rounded once to int8 with the same scales.
  Tensor qw(DType::kI8, {kOut, kIn});
  for (int64_t o = 0; o < kOut; ++o)
    for (int64_t k = 0; k < kIn; ++k) {
      const float q = std::nearbyint(tw.as<float>()[o * kIn + k] / w_scale[o]);
      qw.as<int8_t>()[o * kIn + k] = static_cast<int8_t>(std::max(-127.0f, std::min(127.0f, q)));
    }
  Graph i8;
  GraphBuilder ib(i8);
  ValueId ix = ib.input("x", {DType::kF32, {kSamples, kIn}});
  ib.output(ib.op(
      "QMatMul",
      {ix, ib.constant(qw), ib.constant(f32({kOut}, w_scale)), ib.scalar(DType::kF32, x_scale),
       ib.constant(Tensor::from<uint8_t>(DType::kU8, {}, {128})), ib.constant(tb)}));
  Tensor got = s.compile(i8).run({{"x", x}}).begin()->second;
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.as<float>()[i], want.as<float>()[i], 1e-5) << i;
}

}  // namespace
}  // namespace rlx
