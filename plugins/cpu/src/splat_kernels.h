// The cpu's native kernels for Gaussian splatting (core/src/ops/ops_splat.cpp has the op
// semantics, docs/splatting.md the formulas): projection (splat_project.cpp), tile binning and
// depth sort (splat_bin.cpp), rasterization forward and backward (splat_rasterize.cpp). All run
// in f32 or f64, in parallel with oneTBB (over Gaussians, or over 16x16 tiles).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

// The verdict for a splatting op, nullopt for any other op.
std::optional<Verdict> claim_splat_op(const NodeSignature& s);
bool is_splat_callee(const std::string& callee);
void run_splat_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                      const std::vector<void*>& ptrs);

namespace splat {

constexpr int kTile = 16;

// The image and tile grid a node works on, from its attributes.
struct Grid {
  int width = 0, height = 0, tiles_x = 0, tiles_y = 0;
  explicit Grid(const Attrs& a);
  int tiles() const { return tiles_x * tiles_y; }
};

// Tiles [x0, x1) x [y0, y1) touched by a splat of `radius` pixels centred at (mx, my).
struct TileRect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int64_t count() const { return int64_t{x1 - x0} * (y1 - y0); }
};
template <typename T>
TileRect tile_rect(const Grid& g, T mx, T my, int radius);

template <typename T>
void project(const Attrs& a, int64_t n, const T* means, const T* scales, const T* quats,
             const T* view, const T* intr, T* means2d, T* conics, T* depths, int32_t* radii,
             int32_t* tile_counts);
template <typename T>
void project_backward(const Attrs& a, int64_t n, const T* means, const T* scales, const T* quats,
                      const T* view, const T* intr, const int32_t* radii, const T* d_means2d,
                      const T* d_conics, const T* d_depths, T* d_means, T* d_scales, T* d_quats);
template <typename T>
void tile_bin(const Attrs& a, int64_t n, const T* means2d, const T* depths, const int32_t* radii,
              int64_t capacity, int32_t* tile_offsets, int32_t* ids);

struct RasterArgs {
  int64_t n = 0, channels = 0;
  const void *means2d, *conics, *colors, *opacities, *background;
  const int32_t *tile_offsets, *ids;
};
template <typename T>
void rasterize(const Attrs& a, const RasterArgs& r, T* image, T* final_t, int32_t* last);
template <typename T>
void rasterize_backward(const Attrs& a, const RasterArgs& r, const T* final_t, const int32_t* last,
                        const T* d_image, const T* d_final_t, T* d_means2d, T* d_conics,
                        T* d_colors, T* d_opacities, T* d_background);

}  // namespace splat

}  // namespace rlx::cpu
