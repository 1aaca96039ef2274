// The render chain of Gaussian splatting as graph nodes (rlx/core/splat.h).
#include "rlx/core/error.h"
#include "rlx/core/splat.h"

namespace rlx {

int64_t splat_tiles(int64_t width, int64_t height) {
  return ((width + 15) / 16) * ((height + 15) / 16);
}

SplatRender append_splat_render(GraphBuilder& b, const SplatValues& v, const SplatCamera& camera) {
  const TensorType means = b.type(v.means);
  if (means.rank() != 2 || !means.shape[0].is_static())
    throw_user_error("splatting: means must be [N, 3] with a static N, got " + means.str());
  const int64_t n = means.shape[0].value;
  const int64_t capacity =
      camera.capacity > 0 ? camera.capacity : n * splat_tiles(camera.width, camera.height);
  const Attrs cam = {{"width", camera.width}, {"height", camera.height}, {"near", camera.near}};
  auto proj =
      b.op_n("ProjectGaussians", {v.means, v.scales, v.quats, v.viewmat, v.intrinsics}, cam);
  auto bins = b.op_n("TileBin", {proj[0], proj[2], proj[3]},
                     {{"width", camera.width}, {"height", camera.height}, {"capacity", capacity}});
  auto img =
      b.op_n("Rasterize", {proj[0], proj[1], v.colors, v.opacities, v.background, bins[0], bins[1]},
             {{"width", camera.width}, {"height", camera.height}});
  return {img[0], img[1], img[2], proj[3], proj[4]};
}

}  // namespace rlx
