// Fitting Gaussians to a 2D image: the render chain of splat_graph.cpp behind a fixed pinhole
// camera, a mean squared error, and the Trainer's Adam. The trained values are unconstrained;
// the graph maps them to what the ops take (scales = exp, opacities and colours = logistic), so
// autodiff carries the gradients through those maps too.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

#include "rlx/core/error.h"
#include "rlx/core/splat.h"
#include "rlx/core/trainer.h"

namespace rlx {

namespace {

constexpr double kDepth = 4.0;  // where the Gaussians start, in front of the camera

Tensor f32_tensor(std::vector<int64_t> shape, const std::vector<float>& v) {
  return Tensor::from<float>(DType::kF32, std::move(shape), v);
}

struct FitGraph {
  Graph model;  // outputs: loss, image
};

FitGraph build_fit_graph(int64_t w, int64_t h, const SplatFitOptions& o) {
  const int64_t n = o.gaussians;
  std::mt19937 rng(o.seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::normal_distribution<float> normal(0, 1);
  const double focal = static_cast<double>(w);
  // Each Gaussian starts about as wide as its share of the image.
  const double px_sigma = std::max(1.0, 0.6 * std::sqrt(double(w * h) / double(n)));
  std::vector<float> means, log_scales, quats, opacity(n, 0.5f), colors;
  for (int64_t i = 0; i < n; ++i) {
    const double x = (u(rng) * w - 0.5 * w) * kDepth / focal;
    const double y = (u(rng) * h - 0.5 * h) * kDepth / focal;
    means.insert(means.end(), {float(x), float(y), float(kDepth)});
    const float s = static_cast<float>(std::log(px_sigma * kDepth / focal));
    log_scales.insert(log_scales.end(), {s, s, s});
    for (int j = 0; j < 4; ++j) quats.push_back(normal(rng));
    for (int j = 0; j < 3; ++j) colors.push_back(2 * u(rng) - 1);
  }
  FitGraph f;
  GraphBuilder b(f.model);
  b.set_loc("splat_fit");
  const ValueId target = b.input("target", {DType::kF32, {h, w, 3}});
  SplatValues v;
  v.means = b.param("means", f32_tensor({n, 3}, means));
  v.scales = b.unary("exp", b.param("log_scales", f32_tensor({n, 3}, log_scales)));
  v.quats = b.param("quats", f32_tensor({n, 4}, quats));
  v.opacities = b.unary("logistic", b.param("opacity_logits", f32_tensor({n}, opacity)));
  v.colors = b.unary("logistic", b.param("color_logits", f32_tensor({n, 3}, colors)));
  v.background = b.constant(f32_tensor({3}, {0, 0, 0}));
  v.viewmat = b.constant(f32_tensor({4, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  v.intrinsics = b.constant(f32_tensor({4}, {float(focal), float(focal), 0.5f * w, 0.5f * h}));
  SplatCamera cam;
  cam.width = w, cam.height = h;
  const SplatRender r = append_splat_render(b, v, cam);
  const ValueId diff = b.sub(r.image, target);
  const ValueId sum = b.reduce(b.mul(diff, diff), {0, 1, 2}, ReduceKind::kSum);
  const ValueId loss = b.div(sum, b.scalar(DType::kF32, double(h * w * 3)));
  b.output(loss);
  b.output(r.image);
  return f;
}

}  // namespace

double psnr(const Tensor& a, const Tensor& b) {
  if (a.numel() != b.numel() || a.dtype() != DType::kF32 || b.dtype() != DType::kF32)
    throw_user_error("psnr: the two images must be f32 of one size");
  double se = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = double(a.as<float>()[i]) - b.as<float>()[i];
    se += d * d;
  }
  const double mse = se / double(std::max<int64_t>(1, a.numel()));
  return mse == 0 ? std::numeric_limits<double>::infinity() : -10 * std::log10(mse);
}

SplatFitResult fit_gaussians_to_image(std::shared_ptr<Target> device, const Tensor& target,
                                      const SplatFitOptions& o,
                                      const std::function<void(int64_t, double)>& on_step) {
  const auto& s = target.shape();
  if (target.dtype() != DType::kF32 || s.size() != 3 || s[2] != 3)
    throw_user_error("splat fit: the target image must be f32 [height, width, 3]");
  if (o.gaussians < 1 || o.steps < 0)
    throw_user_error(
        fmt::format("splat fit: --gaussians must be >= 1 and --steps >= 0, got {} and {}",
                    o.gaussians, o.steps));
  FitGraph f = build_fit_graph(s[1], s[0], o);
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  adam.lr = o.lr;
  Trainer trainer(device, f.model, adam);
  SplatFitResult result;
  for (int64_t step = 0; step < o.steps; ++step) {
    const double loss = trainer.step({{"target", target}});
    result.losses.push_back(loss);
    if (on_step) on_step(step, loss);
  }
  // The final render, from the trained values.
  Session session(device);
  CompiledModel eval = session.compile(params_as_inputs(f.model));
  NamedTensors inputs = trainer.parameters();
  inputs["target"] = target;
  NamedTensors out = eval.run(inputs);
  const Graph& m = f.model;
  result.image = out.at(m.values[m.outputs[1]].name);
  for (int64_t i = 0; i < result.image.numel(); ++i)
    result.image.as<float>()[i] = std::clamp(result.image.as<float>()[i], 0.0f, 1.0f);
  result.psnr = psnr(result.image, target);
  return result;
}

}  // namespace rlx
