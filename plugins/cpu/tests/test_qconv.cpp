// QConv on the cpu (src/qconv.cpp): dense and depthwise convolutions with strides and
// asymmetric pads against the op's definition computed here in double precision: x rounded to
// u8 with the calibrated scale and zero (half to even), exact integer sums of (q - zero) * w
// (padding adds nothing), times x_scale * w_scale[o], plus the bias.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "rlx/core/builder.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

namespace rlx {
namespace {

struct Case {
  int n, c, h, w, o, kh, kw, sh, sw, pt, pl, pb, pr, group;
};

void check(const Case& k, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.5f, 2.5f);
  const int cg = k.c / k.group, og = k.o / k.group;
  const int oh = (k.h + k.pt + k.pb - k.kh) / k.sh + 1, ow = (k.w + k.pl + k.pr - k.kw) / k.sw + 1;
  Tensor x(DType::kF32, {k.n, k.c, k.h, k.w}), wq(DType::kI8, {k.o, cg, k.kh, k.kw}),
      ws(DType::kF32, {k.o}), bias(DType::kF32, {k.o});
  for (int64_t i = 0; i < x.numel(); ++i) x.as<float>()[i] = u(rng);
  for (int64_t i = 0; i < wq.numel(); ++i)
    wq.as<int8_t>()[i] = static_cast<int8_t>(rng() % 255 - 127);
  for (int i = 0; i < k.o; ++i) ws.as<float>()[i] = 0.001f * (1 + i), bias.as<float>()[i] = u(rng);
  const float xs = 4.0f / 255;
  const uint8_t xz = 96;

  Graph g;
  GraphBuilder b(g);
  ValueId in = b.input("x", {DType::kF32, {k.n, k.c, k.h, k.w}});
  b.output(b.op(
      "QConv",
      {in, b.constant(wq), b.constant(ws), b.constant(Tensor::from<float>(DType::kF32, {}, {xs})),
       b.constant(Tensor::from<uint8_t>(DType::kU8, {}, {xz})), b.constant(bias)},
      {{"strides", IntList{k.sh, k.sw}},
       {"pads", IntList{k.pt, k.pl, k.pb, k.pr}},
       {"group", int64_t{k.group}}}));
  Session session(test::cpu_target());
  CompiledModel model = session.compile(g);
  EXPECT_NE(model.report().to_text().find("int8 direct convolution"), std::string::npos);
  const Tensor y = model.run({{"x", x}}).begin()->second;
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{k.n, k.o, oh, ow}));

  auto q = [&](int i) {
    const double v = std::nearbyint(static_cast<double>(x.as<float>()[i]) / xs) + xz;
    return static_cast<int>(std::clamp(v, 0.0, 255.0)) - xz;
  };
  int at = 0;
  for (int n = 0; n < k.n; ++n)
    for (int o = 0; o < k.o; ++o)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j, ++at) {
          long long acc = 0;
          for (int ci = 0; ci < cg; ++ci)
            for (int a = 0; a < k.kh; ++a)
              for (int bb = 0; bb < k.kw; ++bb) {
                const int yy = i * k.sh + a - k.pt, xx = j * k.sw + bb - k.pl;
                if (yy < 0 || yy >= k.h || xx < 0 || xx >= k.w) continue;
                const int ch = o / og * cg + ci;
                acc += q(((n * k.c + ch) * k.h + yy) * k.w + xx) *
                       wq.as<int8_t>()[((o * cg + ci) * k.kh + a) * k.kw + bb];
              }
          const double want =
              acc * static_cast<double>(xs * ws.as<float>()[o]) + bias.as<float>()[o];
          ASSERT_NEAR(y.as<float>()[at], want, 1e-5 * std::max(1.0, std::fabs(want)))
              << "at " << at;
        }
}

TEST(CpuQConv, DenseWithStridesAndAsymmetricPads) {
  check({2, 3, 7, 6, 4, 3, 2, 2, 1, 1, 0, 2, 1, 1}, 1);
}

TEST(CpuQConv, DepthwiseAndGrouped) {
  check({1, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6}, 2);  // depthwise
  check({1, 4, 4, 5, 6, 1, 3, 1, 2, 0, 1, 0, 1, 2}, 3);  // two groups of 2 -> 3
}

TEST(CpuQConv, ShapesAreChecked) {
  const std::string err = test::compile_error(
      R"(graph @t(%x: f32[1,3,4,4], %w: i8[2,2,3,3], %s: f32[2], %xs: f32[], %xz: u8[]) {
  %y = QConv(%x, %w, %s, %xs, %xz) : f32[1,2,2,2]
  return %y
}
)",
      test::cpu_target());
  EXPECT_NE(err.find("QConv: x has 3 channels"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlx
