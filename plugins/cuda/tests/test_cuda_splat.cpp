// Gaussian splatting on the cuda target (plugins/cuda/src/splat_call.h), on the device: each op
// alone against the cpu target's kernel on the same inputs (the integer results exactly: radii,
// tile counts, the tile lists in their order, last indices; the floats within 1e-5 relative in
// f32 and 1e-10 in f64, the gradients that the device sums with atomicAdd relative to the
// largest entry, since the order of those sums differs from the cpu's), then the whole render
// against the straightforward reference of plugins/cpu/tests/splat_reference.h, autodiff's
// gradients of a render against the cpu's, and the errors the device finds in the data. Every
// model runs twice, the second time into outputs full of garbage (and, where the run is
// recorded, from the CUDA graph), and both runs are checked. Skips without a CUDA device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "rlx/core/autodiff.h"
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

std::shared_ptr<Target> cuda() {
  return test::target_named("cuda");
}

Tensor uniform(DType dt, std::vector<int64_t> shape, unsigned seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(num_elements(shape)));
  for (double& x : v) x = u(rng);
  return tensor(dt, std::move(shape), v);
}

// Runs `op` alone on `target`, twice: into fresh outputs, then into outputs holding garbage (all
// bits set). Returns both runs' outputs, in the op's order.
struct Runs {
  std::vector<Tensor> fresh, reused;
};
Runs run_op(std::shared_ptr<Target> target, const std::string& op,
            const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Graph g;
  GraphBuilder b(g);
  std::vector<ValueId> ins;
  NamedTensors feed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = fmt::format("in{}", i);
    Shape shape(inputs[i].shape().begin(), inputs[i].shape().end());
    ins.push_back(b.input(name, {inputs[i].dtype(), shape}));
    feed[name] = inputs[i];
  }
  const std::vector<ValueId> outs = b.op_n(op, ins, attrs);
  for (ValueId o : outs) b.output(o);
  Session session(std::move(target));
  CompiledModel m = session.compile(g);
  NamedTensors fresh = m.run(feed), reused;
  for (const auto& [name, t] : fresh) {
    Tensor garbage(t.dtype(), t.shape());
    std::memset(garbage.data(), 0xFF, garbage.nbytes());
    reused[name] = garbage;
  }
  m.run(feed, reused);
  Runs r;
  for (ValueId o : outs) {
    r.fresh.push_back(fresh.at(g.values[o].name));
    r.reused.push_back(reused.at(g.values[o].name));
  }
  return r;
}

// How `got` compares with `want`: the integers exactly; floats within tol * max(1, |want|) each,
// or, with `sums`, within tol * max(1, max |want|) (sums whose order differs).
void expect_matches(const Tensor& want, const Tensor& got, double tol, bool sums,
                    const std::string& what) {
  ASSERT_EQ(want.dtype(), got.dtype()) << what;
  ASSERT_EQ(want.shape(), got.shape()) << what;
  const std::vector<double> w = test::values(want), g = test::values(got);
  if (want.dtype() == DType::kI32) {
    int64_t differ = 0, first = -1;
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i] != g[i] && differ++ == 0) first = static_cast<int64_t>(i);
    EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << w.size()
                         << " entries differ, the first at " << first << " (cpu "
                         << (first >= 0 ? w[first] : 0) << ", cuda " << (first >= 0 ? g[first] : 0)
                         << ")";
    return;
  }
  double scale = 1;
  for (double x : w) scale = std::max(scale, std::abs(x));
  double worst = 0;
  int64_t at = -1;
  for (size_t i = 0; i < w.size(); ++i) {
    const double err = std::abs(g[i] - w[i]) / (sums ? scale : std::max(1.0, std::abs(w[i])));
    if (!(err <= worst)) worst = err, at = static_cast<int64_t>(i);  // NaN counts as worst
  }
  EXPECT_LE(worst, tol) << what << ": worst relative error at " << at << " (cpu "
                        << (at >= 0 ? w[at] : 0) << ", cuda " << (at >= 0 ? g[at] : 0) << ")";
}

double tol_of(DType dt) {
  return dt == DType::kF64 ? 1e-10 : 1e-5;
}

// `op` on cuda against the cpu, output by output (`sums`: which outputs are atomic sums).
void expect_op_matches_cpu(const std::string& op, const std::vector<Tensor>& inputs,
                           const Attrs& attrs, const std::string& what,
                           std::vector<bool> sums = {}) {
  const Runs want = run_op(test::cpu_target(), op, inputs, attrs);
  const Runs got = run_op(cuda(), op, inputs, attrs);
  const double tol = tol_of(inputs[0].dtype());
  for (size_t i = 0; i < want.fresh.size(); ++i) {
    const bool sum = i < sums.size() && sums[i];
    expect_matches(want.fresh[i], got.fresh[i], tol, sum,
                   fmt::format("{} {} output {}", what, op, i));
    expect_matches(want.fresh[i], got.reused[i], tol, sum,
                   fmt::format("{} {} output {} (second run, reused outputs)", what, op, i));
  }
}

Attrs camera(const Scene& s) {
  return {{"width", int64_t{s.width}}, {"height", int64_t{s.height}}, {"near", 0.01}};
}

std::vector<Tensor> projection_inputs(const Scene& s, DType dt) {
  return {tensor(dt, {s.n, 3}, s.means), tensor(dt, {s.n, 3}, s.scales),
          tensor(dt, {s.n, 4}, s.quats), tensor(dt, {4, 4}, s.view), tensor(dt, {4}, s.intrinsics)};
}

// The cpu's projection and tile lists of a scene: what Rasterize is given in the tests below.
struct Binned {
  std::vector<Tensor> projected;  // means2d, conics, depths, radii, tile_counts
  std::vector<Tensor> bins;       // tile_offsets, gaussian_ids
  int64_t capacity = 0;
};
Binned bin_on_cpu(const Scene& s, DType dt) {
  Binned b;
  b.projected =
      run_op(test::cpu_target(), "ProjectGaussians", projection_inputs(s, dt), camera(s)).fresh;
  b.capacity = 0;
  for (double c : test::values(b.projected[4])) b.capacity += static_cast<int64_t>(c);
  b.capacity += 7;  // a tail of -1
  Attrs a = camera(s);
  a["capacity"] = b.capacity;
  b.bins =
      run_op(test::cpu_target(), "TileBin", {b.projected[0], b.projected[2], b.projected[3]}, a)
          .fresh;
  return b;
}

// A scene with Gaussians the projection must cull: behind the camera, far off the screen, a
// zero quaternion, and scales so large that the radius leaves int's range.
Scene scene_with_culled_gaussians() {
  Scene s = splat_test::random_scene(200, 70, 45, 9);
  for (int i = 0; i < 10; ++i) s.means[3 * i + 2] = -1 - i;                 // behind
  for (int i = 10; i < 20; ++i) s.means[3 * i] = 1e3 * s.means[3 * i + 2];  // off screen
  for (int j = 0; j < 4; ++j) s.quats[4 * 20 + j] = 0;
  for (int j = 0; j < 3; ++j) s.scales[3 * 21 + j] = 1e20;
  return s;
}

std::vector<Scene> projection_scenes() {
  return {splat_test::random_scene(300, 75, 53, 7), scene_with_culled_gaussians()};
}

TEST(CudaSplat, ProjectionIsTheCpus) {
  for (DType dt : {DType::kF32, DType::kF64})
    for (const Scene& s : projection_scenes())
      expect_op_matches_cpu("ProjectGaussians", projection_inputs(s, dt), camera(s),
                            fmt::format("{} N={}", dtype_name(dt), s.n));
}

TEST(CudaSplat, ProjectionGradientsAreTheCpus) {
  for (DType dt : {DType::kF32, DType::kF64})
    for (const Scene& s : projection_scenes()) {
      std::vector<Tensor> in = projection_inputs(s, dt);
      const Binned b = bin_on_cpu(s, dt);
      in.push_back(b.projected[3]);  // radii
      in.push_back(uniform(dt, {s.n, 2}, 1));
      in.push_back(uniform(dt, {s.n, 3}, 2));
      in.push_back(uniform(dt, {s.n}, 3));
      expect_op_matches_cpu("ProjectGaussiansBackward", in, camera(s),
                            fmt::format("{} N={}", dtype_name(dt), s.n));
    }
}

// Short lists (sorted by ranks) and lists of more than 1024 Gaussians (the radix sort), with
// depths of the projection and depths with many ties (-0 and +0 among them), which the
// Gaussian index must order as the cpu's comparator does.
TEST(CudaSplat, TileListsAreTheCpusInTheirOrder) {
  Scene crowded = splat_test::random_scene(3000, 48, 40, 5);
  for (double& sc : crowded.scales) sc *= 4;
  for (DType dt : {DType::kF32, DType::kF64})
    for (const Scene& s : {splat_test::random_scene(300, 75, 53, 7), crowded}) {
      const Binned b = bin_on_cpu(s, dt);
      Attrs a = camera(s);
      a["capacity"] = b.capacity;
      const std::string what = fmt::format("{} N={}", dtype_name(dt), s.n);
      expect_op_matches_cpu("TileBin", {b.projected[0], b.projected[2], b.projected[3]}, a, what);
      std::vector<double> tied = test::values(b.projected[2]);
      for (size_t i = 0; i < tied.size(); ++i)
        tied[i] = i % 7 == 0 ? (i % 2 ? -0.0 : 0.0) : std::floor(tied[i]);
      expect_op_matches_cpu("TileBin", {b.projected[0], tensor(dt, {s.n}, tied), b.projected[3]}, a,
                            what + " tied depths");
      if (s.n == 3000) {
        const std::vector<double> off = test::values(b.bins[0]);
        int64_t longest = 0;
        for (size_t t = 0; t + 1 < off.size(); ++t)
          longest = std::max(longest, static_cast<int64_t>(off[t + 1] - off[t]));
        EXPECT_GT(longest, 1024) << "the crowded scene must take the radix sort";
      }
    }
}

TEST(CudaSplat, TooSmallCapacityIsAnErrorThatSaysHowMuch) {
  const Scene s = splat_test::random_scene(50, 64, 64, 5);
  const Binned b = bin_on_cpu(s, DType::kF32);
  Attrs a = camera(s);
  a["capacity"] = int64_t{3};
  auto message = [&](std::shared_ptr<Target> t) -> std::string {
    try {
      run_op(std::move(t), "TileBin", {b.projected[0], b.projected[2], b.projected[3]}, a);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "expected an error";
    return "";
  };
  const std::string cpu = message(test::cpu_target()), gpu = message(cuda());
  const size_t from = cpu.find("the Gaussians cover"), to = cpu.find("capacity is 3");
  ASSERT_NE(from, std::string::npos) << cpu;
  ASSERT_NE(to, std::string::npos) << cpu;
  EXPECT_NE(gpu.find(cpu.substr(from, to + 13 - from)), std::string::npos)
      << "cpu: " << cpu << "\ncuda: " << gpu;
}

// Rasterize's inputs for a scene with `channels` colours: the cpu's projection and lists.
std::vector<Tensor> raster_inputs(const Scene& s, DType dt, int64_t channels, const Binned& b) {
  std::vector<double> colors = s.colors, background = s.background;
  if (channels != 3) {
    const Tensor c = uniform(dt, {s.n, channels}, 11, 0, 1);
    colors = test::values(c);
    background.assign(static_cast<size_t>(channels), 0.25);
  }
  return {b.projected[0],
          b.projected[1],
          tensor(dt, {s.n, channels}, colors),
          tensor(dt, {s.n}, s.opacities),
          tensor(dt, {channels}, background),
          b.bins[0],
          b.bins[1]};
}

std::vector<Scene> raster_scenes() {
  Scene opaque = splat_test::random_scene(600, 40, 34, 11);
  for (double& o : opaque.opacities) o = 1.0;
  for (double& sc : opaque.scales) sc *= 3;
  Scene crowded = splat_test::random_scene(1500, 48, 40, 5);
  for (double& sc : crowded.scales) sc *= 3;
  for (double& o : crowded.opacities) o *= 0.2;  // more than a batch of 256 per pixel
  return {splat_test::random_scene(300, 75, 53, 7), opaque, crowded};
}

TEST(CudaSplat, RasterizeIsTheCpus) {
  for (DType dt : {DType::kF32, DType::kF64})
    for (const Scene& s : raster_scenes())
      for (int64_t channels : {3, 1, 5}) {
        const Binned b = bin_on_cpu(s, dt);
        expect_op_matches_cpu("Rasterize", raster_inputs(s, dt, channels, b),
                              {{"width", int64_t{s.width}}, {"height", int64_t{s.height}}},
                              fmt::format("{} N={} C={}", dtype_name(dt), s.n, channels));
      }
}

TEST(CudaSplat, RasterizeGradientsAreTheCpus) {
  for (DType dt : {DType::kF32, DType::kF64})
    for (const Scene& s : raster_scenes())
      for (int64_t channels : {3, 2}) {
        const Binned b = bin_on_cpu(s, dt);
        std::vector<Tensor> in = raster_inputs(s, dt, channels, b);
        const Attrs a = {{"width", int64_t{s.width}}, {"height", int64_t{s.height}}};
        const Runs forward = run_op(test::cpu_target(), "Rasterize", in, a);
        in.push_back(forward.fresh[1]);  // final_T
        in.push_back(forward.fresh[2]);  // last_index
        in.push_back(uniform(dt, {s.height, s.width, channels}, 5));
        in.push_back(uniform(dt, {s.height, s.width}, 6));
        expect_op_matches_cpu("RasterizeBackward", in, a,
                              fmt::format("{} N={} C={}", dtype_name(dt), s.n, channels),
                              {true, true, true, true, true});
      }
}

// The three forward ops chained on cuda against the reference renderer, as the cpu's test does.
TEST(CudaSplat, TheRenderMatchesTheReference) {
  Scene opaque = splat_test::random_scene(600, 40, 34, 11);
  for (double& o : opaque.opacities) o = 1.0;
  for (double& sc : opaque.scales) sc *= 3;
  for (auto [s, dt, tol] : {std::tuple{splat_test::random_scene(300, 75, 53, 7), DType::kF32, 1e-4},
                            std::tuple{opaque, DType::kF64, 1e-9}}) {
    Graph g;
    GraphBuilder b(g);
    SplatCamera cam;
    cam.width = s.width, cam.height = s.height;
    const SplatRender r = append_splat_render(b, splat_inputs(b, s.n, dt), cam);
    b.output(r.image);
    b.output(r.final_t);
    Session session(cuda());
    CompiledModel m = session.compile(g);
    const NamedTensors out = m.run(scene_inputs(s, dt));
    const splat_test::Render want = splat_test::reference_render(s);
    const std::vector<double> image = test::values(out.at(g.values[r.image].name)),
                              final_t = test::values(out.at(g.values[r.final_t].name));
    double worst = 0, worst_t = 0;
    for (size_t i = 0; i < want.image.size(); ++i)
      worst = std::max(worst, std::abs(image[i] - want.image[i]));
    for (size_t p = 0; p < want.final_t.size(); ++p)
      worst_t = std::max(worst_t, std::abs(final_t[p] - want.final_t[p]));
    EXPECT_LE(worst, tol) << dtype_name(dt) << ": max abs error of the image";
    EXPECT_LE(worst_t, tol) << dtype_name(dt) << ": max abs error of the final transmittance";
  }
}

// loss = sum(image * wi) + sum(final_T * wt), differentiated through all five ops on cuda,
// against the same graph on the cpu (whose gradients the cpu's tests check by finite differences).
TEST(CudaSplat, AutodiffGradientsOfARenderAreTheCpus) {
  Scene s = splat_test::random_scene(40, 40, 30, 21, 0.9);
  for (double& sc : s.scales) sc *= 2.5;
  for (DType dt : {DType::kF64, DType::kF32}) {
    Graph g;
    GraphBuilder b(g);
    const SplatValues v = splat_inputs(b, s.n, dt);
    SplatCamera cam;
    cam.width = s.width, cam.height = s.height;
    const SplatRender r = append_splat_render(b, v, cam);
    const ValueId wi = b.constant(uniform(dt, {s.height, s.width, 3}, 8));
    const ValueId wt = b.constant(uniform(dt, {s.height, s.width}, 9));
    const ValueId loss = b.add(b.reduce(b.mul(r.image, wi), {0, 1, 2}, ReduceKind::kSum),
                               b.reduce(b.mul(r.final_t, wt), {0, 1}, ReduceKind::kSum));
    b.output(loss);
    for (ValueId grad : append_gradients(
             g, loss, {v.means, v.scales, v.quats, v.opacities, v.colors, v.background}))
      b.output(grad);
    const NamedTensors in = scene_inputs(s, dt);
    Session cpu(test::cpu_target()), gpu(cuda());
    CompiledModel on_cpu = cpu.compile(g), on_gpu = gpu.compile(g);
    const NamedTensors want = on_cpu.run(in);
    for (int run = 0; run < 2; ++run) {  // the second run replays what the first recorded
      const NamedTensors got = on_gpu.run(in);
      for (size_t k = 0; k < g.outputs.size(); ++k) {
        const std::string& name = g.values[g.outputs[k]].name;
        expect_matches(want.at(name), got.at(name), tol_of(dt), true,
                       fmt::format("{} run {} output {} ({})", dtype_name(dt), run, k, name));
      }
    }
  }
}

// Tile lists that are not TileBin's are user errors found on the device (the cpu would read
// past its buffers): an id that is no Gaussian, offsets that are no range.
TEST(CudaSplat, BrokenTileListsAreUserErrors) {
  const Scene s = splat_test::random_scene(300, 75, 53, 7);
  const Binned b = bin_on_cpu(s, DType::kF32);
  const Attrs a = {{"width", int64_t{s.width}}, {"height", int64_t{s.height}}};
  auto error_of = [&](std::vector<Tensor> in) -> std::string {
    try {
      run_op(cuda(), "Rasterize", in, a);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
      return e.what();
    }
    return "no error";
  };
  const std::vector<Tensor> in = raster_inputs(s, DType::kF32, 3, b);
  const int32_t* offsets = in[5].as<int32_t>();
  int tile = 0;
  while (offsets[tile + 1] == offsets[tile]) ++tile;  // the first tile with a list
  std::vector<Tensor> bad_id = in;
  bad_id[6] = in[6].clone();
  bad_id[6].as<int32_t>()[offsets[tile]] = 300 + 5;
  const std::string m = error_of(bad_id);
  EXPECT_NE(m.find(fmt::format("gaussian_ids[{}] = 305", offsets[tile])), std::string::npos) << m;
  std::vector<Tensor> bad_offsets = in;
  bad_offsets[5] = in[5].clone();
  bad_offsets[5].as<int32_t>()[2] = -4;  // tile 1 ends before it starts, tile 2 starts at -4
  const std::string o = error_of(bad_offsets);
  EXPECT_NE(o.find("are not a range of gaussian_ids"), std::string::npos) << o;
}

}  // namespace
}  // namespace rlx
