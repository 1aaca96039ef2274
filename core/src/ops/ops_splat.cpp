// HIR ops of 3D Gaussian splatting (docs/splatting.md has the full semantics), after the
// reference formulation (Kerbl et al. 2023; gsplat's EWA projection and tiled rasterizer):
//   ProjectGaussians(means [N,3], scales [N,3], quats [N,4] (w,x,y,z), viewmat [4,4] (world to
//     camera, row-major, OpenCV axes), intrinsics [4] (fx, fy, cx, cy)) {width, height, near}
//     -> means2d [N,2], conics [N,3] (inverse 2D covariance a, b, c), depths [N],
//        radii i32[N], tile_counts i32[N]
//     EWA: cov2d = J W Sigma W^T J^T + 0.3 I; Gaussians with z < near, a non-positive cov2d
//     determinant or no 16x16 tile on screen get radius 0 and zeros elsewhere.
//   TileBin(means2d, depths, radii) {width, height, capacity}
//     -> tile_offsets i32[tiles + 1], gaussian_ids i32[capacity]
//     every (tile, Gaussian) pair of each Gaussian's tile rectangle, sorted by (tile, depth);
//     tile t's list is gaussian_ids[tile_offsets[t] .. tile_offsets[t + 1]], the rest is -1.
//     More pairs than `capacity` is a run-time error that says how many there were.
//   Rasterize(means2d, conics, colors [N,C], opacities [N], background [C], tile_offsets,
//     gaussian_ids) {width, height} -> image [H,W,C], final_T [H,W], last_index i32[H,W]
//     front-to-back: alpha = min(0.99, o exp(-sigma)), skipped below 1/255, stop before a
//     Gaussian that would leave T <= 1e-4; image = sum c alpha T + T_final background.
// Their gradients are the backward ops below, native like the forward ones: the sort and the
// tile lists have no useful MIR form, so there is no decomposition and a target without a
// native kernel refuses them by name.
#include "autodiff/vjp_util.h"
#include "ops/op_family.h"
#include "ops/op_helpers.h"

namespace rlx {
using namespace ops;

namespace {

constexpr int64_t kTile = 16;

int64_t tiles_of(const Node& n) {
  const int64_t w = n.attr_int("width", 0), h = n.attr_int("height", 0);
  if (w <= 0 || h <= 0) fail("{}: width and height must be positive, got {}x{}", n.op, w, h);
  return ((w + kTile - 1) / kTile) * ((h + kTile - 1) / kTile);
}

// Checks that t is dtype[N, cols...] (rank 1 when cols is empty) with the Gaussians' N.
void expect_rows(const TensorType& t, DType dt, const Dim& n, std::vector<int64_t> cols,
                 const char* op, const char* what) {
  bool ok = t.dtype == dt && t.rank() == static_cast<int64_t>(cols.size()) + 1 && t.shape[0] == n;
  for (size_t i = 0; ok && i < cols.size(); ++i) ok = t.shape[i + 1] == Dim(cols[i]);
  if (!ok) {
    std::string want = fmt::format("{}[{}", dtype_name(dt), n.str());
    for (int64_t c : cols) want += fmt::format(", {}", c);
    fail("{}: {} must be {}], got {}", op, what, want, t.str());
  }
}

DType float_of(const TensorType& t, const char* op) {
  if (t.dtype != DType::kF32 && t.dtype != DType::kF64)
    fail("{} computes in f32 or f64, got {}", op, t.str());
  return t.dtype;
}

void check_camera(const std::vector<TensorType>& in, DType dt, const char* op) {
  const TensorType &view = in[3], &k = in[4];
  if (view.dtype != dt || !(view.shape == Shape{4, 4}))
    fail("{}: viewmat must be {}[4, 4], got {}", op, dtype_name(dt), view.str());
  if (k.dtype != dt || !(k.shape == Shape{4}))
    fail("{}: intrinsics must be {}[4] (fx, fy, cx, cy), got {}", op, dtype_name(dt), k.str());
}

std::vector<TensorType> infer_project(const std::vector<TensorType>& in, const Node& n) {
  const char* op = "ProjectGaussians";
  const DType dt = float_of(in[0], op);
  const Dim N = in[0].rank() == 2 ? in[0].shape[0] : Dim(0);
  expect_rows(in[0], dt, N, {3}, op, "means");
  expect_rows(in[1], dt, N, {3}, op, "scales");
  expect_rows(in[2], dt, N, {4}, op, "quats");
  check_camera(in, dt, op);
  tiles_of(n);
  return {tt(dt, {N, 2}), tt(dt, {N, 3}), tt(dt, {N}), tt(DType::kI32, {N}), tt(DType::kI32, {N})};
}

std::vector<TensorType> infer_project_backward(const std::vector<TensorType>& in, const Node& n) {
  const char* op = "ProjectGaussiansBackward";
  infer_project({in.begin(), in.begin() + 5}, n);
  const Dim N = in[0].shape[0];
  const DType dt = in[0].dtype;
  expect_rows(in[5], DType::kI32, N, {}, op, "radii");
  expect_rows(in[6], dt, N, {2}, op, "d_means2d");
  expect_rows(in[7], dt, N, {3}, op, "d_conics");
  expect_rows(in[8], dt, N, {}, op, "d_depths");
  return {in[0], in[1], in[2]};
}

std::vector<TensorType> infer_tile_bin(const std::vector<TensorType>& in, const Node& n) {
  const char* op = "TileBin";
  const DType dt = float_of(in[0], op);
  const Dim N = in[0].rank() == 2 ? in[0].shape[0] : Dim(0);
  expect_rows(in[0], dt, N, {2}, op, "means2d");
  expect_rows(in[1], dt, N, {}, op, "depths");
  expect_rows(in[2], DType::kI32, N, {}, op, "radii");
  const int64_t cap = n.attr_int("capacity", -1);
  if (cap < 0) fail("TileBin: capacity (the most (tile, Gaussian) pairs) must be given, >= 0");
  return {tt(DType::kI32, {tiles_of(n) + 1}), tt(DType::kI32, {cap})};
}

// Rasterize's seven inputs; returns C (the colour channels).
int64_t check_raster_inputs(const std::vector<TensorType>& in, const Node& n, const char* op) {
  const DType dt = float_of(in[0], op);
  const Dim N = in[0].rank() == 2 ? in[0].shape[0] : Dim(0);
  expect_rows(in[0], dt, N, {2}, op, "means2d");
  expect_rows(in[1], dt, N, {3}, op, "conics");
  if (in[2].rank() != 2 || !in[2].shape[1].is_static())
    fail("{}: colors must be {}[N, C] with a static C, got {}", op, dtype_name(dt), in[2].str());
  const int64_t c = in[2].shape[1].value;
  expect_rows(in[2], dt, N, {c}, op, "colors");
  expect_rows(in[3], dt, N, {}, op, "opacities");
  if (in[4].dtype != dt || !(in[4].shape == Shape{c}))
    fail("{}: background must be {}[{}], got {}", op, dtype_name(dt), c, in[4].str());
  if (in[5].dtype != DType::kI32 || !(in[5].shape == Shape{tiles_of(n) + 1}))
    fail("{}: tile_offsets must be i32[{}] (TileBin's, same width and height), got {}", op,
         tiles_of(n) + 1, in[5].str());
  if (in[6].dtype != DType::kI32 || in[6].rank() != 1)
    fail("{}: gaussian_ids must be TileBin's i32[capacity], got {}", op, in[6].str());
  return c;
}

std::vector<TensorType> infer_rasterize(const std::vector<TensorType>& in, const Node& n) {
  const int64_t c = check_raster_inputs(in, n, "Rasterize");
  const int64_t w = n.attr_int("width"), h = n.attr_int("height");
  return {tt(in[0].dtype, {h, w, c}), tt(in[0].dtype, {h, w}), tt(DType::kI32, {h, w})};
}

std::vector<TensorType> infer_rasterize_backward(const std::vector<TensorType>& in, const Node& n) {
  const char* op = "RasterizeBackward";
  const int64_t c = check_raster_inputs(in, n, op);
  const int64_t w = n.attr_int("width"), h = n.attr_int("height");
  const DType dt = in[0].dtype;
  auto expect = [&](const TensorType& t, const TensorType& want, const char* what) {
    if (!(t == want)) fail("{}: {} must be {}, got {}", op, what, want.str(), t.str());
  };
  expect(in[7], tt(dt, {h, w}), "final_T");
  expect(in[8], tt(DType::kI32, {h, w}), "last_index");
  expect(in[9], tt(dt, {h, w, c}), "d_image");
  expect(in[10], tt(dt, {h, w}), "d_final_T");
  return {in[0], in[1], in[2], in[3], in[4]};
}

Attrs camera_attrs(const Node& n) {
  return {{"width", n.attr_int("width")},
          {"height", n.attr_int("height")},
          {"near", n.attr_float("near", 0.01)}};
}

// d means, scales, quats through ProjectGaussiansBackward; the camera gets no gradient.
std::vector<ValueId> project_gradient(GraphBuilder& b, const Node& n,
                                      const std::vector<ValueId>& in,
                                      const std::vector<ValueId>& ct) {
  auto g = b.op_n("ProjectGaussiansBackward",
                  {in[0], in[1], in[2], in[3], in[4], n.outputs[3], ct[0], ct[1], ct[2]},
                  camera_attrs(n));
  return {g[0], g[1], g[2], kNoValue, kNoValue};
}

std::vector<ValueId> rasterize_gradient(GraphBuilder& b, const Node& n,
                                        const std::vector<ValueId>& in,
                                        const std::vector<ValueId>& ct) {
  std::vector<ValueId> args = in;
  args.insert(args.end(), {n.outputs[1], n.outputs[2], ct[0], ct[1]});
  auto g = b.op_n("RasterizeBackward", args,
                  {{"width", n.attr_int("width")}, {"height", n.attr_int("height")}});
  return {g[0], g[1], g[2], g[3], g[4], kNoValue, kNoValue};
}

Attrs sample_camera() {
  return {{"width", int64_t{32}}, {"height", int64_t{16}}, {"near", 0.01}};
}

}  // namespace

void splat_ops(OpFamily& f) {
  auto only_floats = [](DType dt) { return dt == DType::kF32 || dt == DType::kF64; };
  OpDef p{"ProjectGaussians", OpLevel::kHir, OpClass::kOpaque, 5, 5, 5};
  p.infer = infer_project;
  p.gradient = project_gradient;
  p.sample = [=](DType dt) -> std::optional<OpSample> {
    if (!only_floats(dt)) return std::nullopt;
    return sample_of({tt(dt, {8, 3}), tt(dt, {8, 3}), tt(dt, {8, 4}), tt(dt, {4, 4}), tt(dt, {4})},
                     sample_camera());
  };
  p.summary = "EWA projection of 3D Gaussians to screen (0.3 px low-pass, near-plane culling)";

  OpDef pb{"ProjectGaussiansBackward", OpLevel::kHir, OpClass::kOpaque, 9, 9, 3};
  pb.infer = infer_project_backward;
  pb.sample = [=](DType dt) -> std::optional<OpSample> {
    if (!only_floats(dt)) return std::nullopt;
    return sample_of({tt(dt, {8, 3}), tt(dt, {8, 3}), tt(dt, {8, 4}), tt(dt, {4, 4}), tt(dt, {4}),
                      tt(DType::kI32, {8}), tt(dt, {8, 2}), tt(dt, {8, 3}), tt(dt, {8})},
                     sample_camera());
  };
  pb.summary = "gradients of ProjectGaussians for means, scales and quaternions";

  OpDef t{"TileBin", OpLevel::kHir, OpClass::kOpaque, 3, 3, 2};
  t.infer = infer_tile_bin;
  // Integer results: nothing flows back through the binning.
  t.gradient = [](GraphBuilder&, const Node&, const std::vector<ValueId>& in,
                  const std::vector<ValueId>&) {
    return std::vector<ValueId>(in.size(), kNoValue);
  };
  t.sample = [=](DType dt) -> std::optional<OpSample> {
    if (!only_floats(dt)) return std::nullopt;
    Attrs a = sample_camera();
    a["capacity"] = int64_t{64};
    return sample_of({tt(dt, {8, 2}), tt(dt, {8}), tt(DType::kI32, {8})}, a);
  };
  t.summary = "per-tile lists of Gaussians sorted by (tile, depth) {width, height, capacity}";

  auto raster_sample = [=](DType dt, bool backward) -> std::optional<OpSample> {
    if (!only_floats(dt)) return std::nullopt;
    std::vector<TensorType> in = {tt(dt, {8, 2}),       tt(dt, {8, 3}), tt(dt, {8, 3}),
                                  tt(dt, {8}),          tt(dt, {3}),    tt(DType::kI32, {3}),
                                  tt(DType::kI32, {64})};
    if (backward)
      in.insert(in.end(), {tt(dt, {16, 32}), tt(DType::kI32, {16, 32}), tt(dt, {16, 32, 3}),
                           tt(dt, {16, 32})});
    return sample_of(in, {{"width", int64_t{32}}, {"height", int64_t{16}}});
  };
  OpDef r{"Rasterize", OpLevel::kHir, OpClass::kOpaque, 7, 7, 3};
  r.infer = infer_rasterize;
  r.gradient = rasterize_gradient;
  r.sample = [=](DType dt) { return raster_sample(dt, false); };
  r.summary = "front-to-back alpha compositing of binned Gaussians per 16x16 tile";

  OpDef rb{"RasterizeBackward", OpLevel::kHir, OpClass::kOpaque, 11, 11, 5};
  rb.infer = infer_rasterize_backward;
  rb.sample = [=](DType dt) { return raster_sample(dt, true); };
  rb.summary = "gradients of Rasterize for 2D means, conics, colours, opacities and background";

  for (OpDef* d : {&p, &pb, &t, &r, &rb}) f.add(std::move(*d));
}

}  // namespace rlx
