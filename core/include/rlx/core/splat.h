// Gaussian splatting graphs (the ops are in core/src/ops/ops_splat.cpp, docs/splatting.md):
// the render chain ProjectGaussians -> TileBin -> Rasterize, and fitting Gaussians to an image
// with Adam through the Trainer (what `rlx splat-fit` and examples/splat_fit.cpp run).
//
//   GraphBuilder b(g);
//   SplatRender r = append_splat_render(b, gaussians, camera);  // image [H,W,3], ...
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "rlx/core/builder.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx {

struct SplatCamera {
  int64_t width = 0, height = 0;
  double near = 0.01;
  // Upper bound on (tile, Gaussian) pairs TileBin may produce; 0: Gaussians x tiles, which no
  // scene can exceed.
  int64_t capacity = 0;
};

// Values of a graph: means [N,3], scales [N,3], quats [N,4], opacities [N], colors [N,C],
// background [C], viewmat [4,4], intrinsics [4], all of one float dtype.
struct SplatValues {
  ValueId means, scales, quats, opacities, colors, background, viewmat, intrinsics;
};
struct SplatRender {
  ValueId image, final_t, last_index;  // [H,W,C], [H,W], i32[H,W]
  ValueId radii, tile_counts;          // i32[N]
};

int64_t splat_tiles(int64_t width, int64_t height);  // 16x16 tiles covering the image
SplatRender append_splat_render(GraphBuilder& b, const SplatValues& v, const SplatCamera& camera);

struct SplatFitOptions {
  int64_t gaussians = 2000;
  int64_t steps = 300;
  double lr = 0.01;
  unsigned seed = 0;
};
struct SplatFitResult {
  Tensor image;                // f32 [H,W,3] in [0, 1]: the last step's render
  std::vector<double> losses;  // mean squared error per step, before its update
  double psnr = 0;             // of `image` against the target, in dB
};
// Fits `gaussians` Gaussians (in front of a pinhole camera) to `target` (f32 [H,W,3] in [0,1])
// with Adam on the mean squared error, on `device`. on_step(step, loss) is called after each.
SplatFitResult fit_gaussians_to_image(std::shared_ptr<Target> device, const Tensor& target,
                                      const SplatFitOptions& options,
                                      const std::function<void(int64_t, double)>& on_step = {});

// Peak signal-to-noise ratio of two images in [0, 1], in dB (infinity when equal).
double psnr(const Tensor& a, const Tensor& b);

}  // namespace rlx
