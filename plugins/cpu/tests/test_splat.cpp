// Gaussian splatting on the cpu: renders against the straightforward f64 renderer of
// splat_reference.h (max abs error <= 1e-4), two Gaussians composited by hand, the tile lists
// against a sort written here, gradients of all three ops against central finite differences in
// f64, and the refusal of a target with no splatting kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "rlx/core/autodiff.h"
#include "rlx/core/dispatch.h"
#include "rlx/core/error.h"
#include "rlx/core/splat.h"
#include "splat_graph_inputs.h"
#include "splat_reference.h"
#include "test_support.h"

namespace rlx {
namespace {

using splat_test::Scene;
using splat_test::scene_inputs;
using splat_test::splat_inputs;
using splat_test::tensor;

std::vector<double> as_doubles(const Tensor& t) {
  return test::values(t);
}

// Renders the scene through ProjectGaussians -> TileBin -> Rasterize on the cpu; also returns
// the tile lists (for last_index, a position in them).
struct Rendered {
  std::vector<double> image, final_t;
  std::vector<int32_t> last, offsets, ids;
};
Rendered render(const Scene& s, DType dt) {
  Graph g;
  GraphBuilder b(g);
  const SplatValues v = splat_inputs(b, s.n, dt);
  const Attrs cam = {{"width", int64_t{s.width}}, {"height", int64_t{s.height}}};
  auto p = b.op_n("ProjectGaussians", {v.means, v.scales, v.quats, v.viewmat, v.intrinsics}, cam);
  Attrs bin = cam;
  bin["capacity"] = int64_t{s.n} * splat_tiles(s.width, s.height);
  auto t = b.op_n("TileBin", {p[0], p[2], p[3]}, bin);
  auto r = b.op_n("Rasterize", {p[0], p[1], v.colors, v.opacities, v.background, t[0], t[1]}, cam);
  for (ValueId o : {r[0], r[1], r[2], t[0], t[1]}) b.output(o);
  Session session(test::cpu_target());
  CompiledModel m = session.compile(g);
  NamedTensors out = m.run(scene_inputs(s, dt));
  auto ints = [&](ValueId id) {
    const Tensor& x = out.at(g.values[id].name);
    return std::vector<int32_t>(x.as<int32_t>(), x.as<int32_t>() + x.numel());
  };
  return {as_doubles(out.at(g.values[r[0]].name)), as_doubles(out.at(g.values[r[1]].name)),
          ints(r[2]), ints(t[0]), ints(t[1])};
}

void expect_matches_reference(const Scene& s, DType dt, double tol) {
  const splat_test::Render want = splat_test::reference_render(s);
  const Rendered got = render(s, dt);
  ASSERT_EQ(got.image.size(), want.image.size());
  double worst = 0, worst_t = 0;
  for (size_t i = 0; i < want.image.size(); ++i)
    worst = std::max(worst, std::abs(got.image[i] - want.image[i]));
  int mismatched_last = 0, composited = 0;
  for (size_t p = 0; p < want.final_t.size(); ++p) {
    worst_t = std::max(worst_t, std::abs(got.final_t[p] - want.final_t[p]));
    const int id = got.last[p] < 0 ? -1 : got.ids[got.last[p]];
    mismatched_last += id != want.last_id[p];
    composited += want.last_id[p] >= 0;
  }
  EXPECT_LE(worst, tol) << "max abs error of the image";
  EXPECT_LE(worst_t, tol) << "max abs error of the final transmittance";
  EXPECT_EQ(mismatched_last, 0) << "pixels whose last contributing Gaussian differs";
  EXPECT_GT(composited, static_cast<int>(want.final_t.size()) / 4) << "the scene covers too little";
}

TEST(CpuSplat, RandomSceneMatchesTheReferenceInF32) {
  expect_matches_reference(splat_test::random_scene(300, 75, 53, 7), DType::kF32, 1e-4);
}

TEST(CpuSplat, DenseOpaqueSceneSaturatesAndMatchesInF64) {
  // Many nearly opaque Gaussians: pixels reach the T <= 1e-4 stop and the 0.99 alpha clamp.
  Scene s = splat_test::random_scene(600, 40, 34, 11);
  for (double& o : s.opacities) o = 1.0;
  for (double& sc : s.scales) sc *= 3;
  const splat_test::Render want = splat_test::reference_render(s);
  int saturated = 0;
  for (double t : want.final_t) saturated += t < 1e-3;
  EXPECT_GT(saturated, 100);
  expect_matches_reference(s, DType::kF64, 1e-9);
}

TEST(CpuSplat, TwoGaussiansCompositeFrontToBackByHand) {
  // Two round Gaussians on the optical axis, red at z = 2 in front of blue at z = 3 (given in
  // the other order). At the centre pixel sigma = 0, so alpha = opacity.
  Scene s;
  s.n = 2, s.width = 33, s.height = 33;
  s.intrinsics = {30, 30, 16.5, 16.5};
  s.means = {0, 0, 3, 0, 0, 2};
  s.scales = {0.2, 0.2, 0.2, 0.1, 0.1, 0.1};
  s.quats = {1, 0, 0, 0, 0, 0, 0, 2};  // the identity, and a half-turn about z (round anyway)
  s.opacities = {0.8, 0.6};
  s.colors = {0, 0, 1, 1, 0, 0};
  s.background = {0.5, 0.5, 0.5};
  const Rendered got = render(s, DType::kF32);
  const size_t centre = 16 * 33 + 16;
  // red 0.6; blue 0.8 * (1 - 0.6); background through 0.4 * 0.2.
  EXPECT_NEAR(got.image[3 * centre + 0], 0.6 + 0.08 * 0.5, 1e-6);
  EXPECT_NEAR(got.image[3 * centre + 1], 0.08 * 0.5, 1e-6);
  EXPECT_NEAR(got.image[3 * centre + 2], 0.32 + 0.08 * 0.5, 1e-6);
  EXPECT_NEAR(got.final_t[centre], 0.08, 1e-6);
  EXPECT_EQ(got.ids[got.last[centre]], 0);  // blue, the farther one, was composited last
  // A corner pixel is beyond both radii: the background only.
  EXPECT_NEAR(got.image[0], 0.5, 1e-7);
  EXPECT_EQ(got.last[0], -1);
}

TEST(CpuSplat, TileListsHoldEveryOverlapSortedByDepth) {
  const Scene s = splat_test::random_scene(120, 70, 45, 3);
  const Rendered got = render(s, DType::kF32);
  const int tiles = static_cast<int>(splat_tiles(s.width, s.height));
  ASSERT_EQ(got.offsets.size(), size_t(tiles) + 1);
  EXPECT_EQ(got.offsets[0], 0);
  // Depths in camera space: z of view * mean (the view has no rotation here).
  auto depth = [&](int i) { return s.means[3 * i + 2] + s.view[11]; };
  int64_t pairs = 0;
  for (int t = 0; t < tiles; ++t) {
    ASSERT_LE(got.offsets[t], got.offsets[t + 1]);
    std::set<int> seen;
    for (int k = got.offsets[t]; k < got.offsets[t + 1]; ++k) {
      EXPECT_TRUE(seen.insert(got.ids[k]).second) << "Gaussian listed twice in tile " << t;
      if (k > got.offsets[t]) EXPECT_LE(depth(got.ids[k - 1]), depth(got.ids[k]));
    }
    pairs += got.offsets[t + 1] - got.offsets[t];
  }
  EXPECT_GT(pairs, 120);
  for (size_t k = pairs; k < got.ids.size(); ++k) ASSERT_EQ(got.ids[k], -1);
}

TEST(CpuSplat, TooSmallCapacityIsAnErrorThatSaysHowMuch) {
  const Scene s = splat_test::random_scene(50, 64, 64, 5);
  Graph g;
  GraphBuilder b(g);
  const SplatValues v = splat_inputs(b, s.n, DType::kF32);
  SplatCamera cam;
  cam.width = s.width, cam.height = s.height, cam.capacity = 3;
  b.output(append_splat_render(b, v, cam).image);
  Session session(test::cpu_target());
  CompiledModel m = session.compile(g);
  try {
    m.run(scene_inputs(s, DType::kF32));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capacity is 3"), std::string::npos) << e.what();
  }
}

// loss = sum(image * wi) + sum(final_T * wt), differentiated by autodiff through the three ops
// (their backward kernels) and by central differences of the forward program.
TEST(CpuSplat, GradientsOfAllThreeOpsMatchFiniteDifferencesInF64) {
  Scene s = splat_test::random_scene(6, 24, 20, 21, 0.9);
  for (double& sc : s.scales) sc *= 2.5;
  const DType dt = DType::kF64;
  Graph g;
  GraphBuilder b(g);
  const SplatValues v = splat_inputs(b, s.n, dt);
  SplatCamera cam;
  cam.width = s.width, cam.height = s.height;
  const SplatRender r = append_splat_render(b, v, cam);
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> wi(size_t(s.width) * s.height * 3), wt(size_t(s.width) * s.height);
  for (double& x : wi) x = u(rng);
  for (double& x : wt) x = u(rng);
  auto weighted = [&](ValueId x, const std::vector<double>& w, std::vector<int64_t> shape) {
    ValueId c = b.constant(tensor(dt, shape, w));
    IntList axes;
    for (size_t i = 0; i < shape.size(); ++i) axes.push_back(int64_t(i));
    return b.reduce(b.mul(x, c), axes, ReduceKind::kSum);
  };
  const ValueId loss = b.add(weighted(r.image, wi, {s.height, s.width, 3}),
                             weighted(r.final_t, wt, {s.height, s.width}));
  b.output(loss);
  Graph forward = g;
  const std::vector<ValueId> wrt = {v.means,     v.scales, v.quats,
                                    v.opacities, v.colors, v.background};
  for (ValueId grad : append_gradients(g, loss, wrt)) b.output(grad);

  Session session(test::cpu_target());
  CompiledModel with_grads = session.compile(g);
  CompiledModel loss_only = session.compile(forward);
  NamedTensors in = scene_inputs(s, dt);
  NamedTensors out = with_grads.run(in);
  const char* names[] = {"means", "scales", "quats", "opacities", "colors", "background"};
  const double eps = 1e-6;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const std::vector<double> analytic = as_doubles(out.at(g.values[g.outputs[k + 1]].name));
    Tensor& x = in.at(names[k]);
    double scale = 0;
    for (double a : analytic) scale = std::max(scale, std::abs(a));
    EXPECT_GT(scale, 1e-3) << names[k] << ": gradients are all (near) zero";
    for (int64_t i = 0; i < x.numel(); ++i) {
      double& xi = x.as<double>()[i];
      const double keep = xi;
      xi = keep + eps;
      const double up = as_doubles(loss_only.run(in).begin()->second)[0];
      xi = keep - eps;
      const double down = as_doubles(loss_only.run(in).begin()->second)[0];
      xi = keep;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, 1e-5 * std::max(1.0, scale)) << names[k] << "[" << i << "]";
    }
  }
}

TEST(CpuSplat, ATargetWithoutSplattingKernelsRefusesNamingTheOp) {
  std::shared_ptr<Target> gpu;
  try {
    gpu = test::target_named("gpu");
  } catch (const Error& e) {
    GTEST_SKIP() << "the gpu target does not load here: " << e.what();
  }
  const Scene s = splat_test::random_scene(4, 16, 16, 1);
  Graph g;
  GraphBuilder b(g);
  SplatCamera cam;
  cam.width = 16, cam.height = 16;
  b.output(append_splat_render(b, splat_inputs(b, s.n, DType::kF32), cam).image);
  try {
    dispatch(g, *gpu);
    FAIL() << "dispatch accepted splatting ops on gpu";
  } catch (const CompileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ProjectGaussians"), std::string::npos) << m;
    EXPECT_NE(m.find("no MIR decomposition"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rlx
