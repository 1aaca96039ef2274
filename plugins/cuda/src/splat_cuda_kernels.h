// The CUDA source of the Gaussian splatting ops on the cuda target (splat_call.h runs it): one
// module per call, shapes and attributes baked into the text as constants, as in every kernel
// the target writes. The arithmetic follows the cpu's kernels (plugins/cpu/src/splat_*.cpp)
// operation for operation (projection in f64 whatever the dtype, rasterization in the dtype),
// so that with NVRTC's --fmad=false the results are the cpu's up to the last bits of exp and
// the order of the gradient sums.
//
// Kernels (extern "C"), their parameters (device buffers, in order) and work-items (T: tiles):
//   ProjectGaussians: project(means, scales, quats, viewmat, intrinsics, means2d, conics,
//     depths, radii, tile_counts) over N.
//   ProjectGaussiansBackward: project_backward(means, scales, quats, viewmat, intrinsics, radii,
//     d_means2d, d_conics, d_depths, d_means, d_scales, d_quats) over N.
//   TileBin: bin_count(means2d, radii, counts) over N; bin_scan(counts, tile_offsets, status)
//     over kSplatBlock; bin_fill(means2d, radii, counts, gaussian_ids, status) over N;
//     bin_sort(depths, tile_offsets, gaussian_ids, scratch, status) over T x kSplatBlock;
//     bin_tail(tile_offsets, gaussian_ids) over capacity.
//   Rasterize: rasterize(means2d, conics, colors, opacities, background, tile_offsets,
//     gaussian_ids, image, final_T, last_index, status) over T x kSplatBlock.
//   RasterizeBackward: rasterize_backward(Rasterize's 7 inputs, final_T, last_index, d_image,
//     d_final_T, d_means2d, d_conics, d_colors, d_opacities, d_background, status) over
//     T x kSplatBlock.
// `counts` is u32[T] (zeroed before bin_count), `scratch` i32[capacity], `status` the call's
// u64[4] (zeroed before the run; see SplatStatus).
#pragma once
#include <cstdint>
#include <string>

namespace rlx::cuda {

// Threads of a block in the cooperative kernels (bin_scan, bin_sort, rasterize and its
// backward): one 16x16 tile is one block. The kernels say so with __launch_bounds__, which is
// what makes CudaDevice::launch use blocks of this size, and report any other size.
constexpr int64_t kSplatBlock = 256;

// status[0] of a call: what went wrong (the first report wins), status[1..3] its numbers.
enum class SplatStatus : uint64_t {
  kOk = 0,
  kOverCapacity = 1,  // TileBin: [1] the pairs there were
  kTooManyPairs = 2,  // TileBin: [1] the pairs, beyond i32 offsets
  kBadOffsets = 3,    // Rasterize*: [1] tile, [2] its offset, [3] the next (as unsigned bits)
  kBadId = 4,         // Rasterize*: [1] position in gaussian_ids, [2] the id there
  kBadLast = 5,       // RasterizeBackward: [1] pixel, [2] its last_index
  kBadBlock = 6,      // a cooperative kernel ran in blocks of [1] threads
};

// What decides the module of one call.
struct SplatCallShape {
  std::string op;         // "ProjectGaussians", ...
  bool f64 = false;       // else f32
  int64_t gaussians = 0;  // N
  int64_t width = 0, height = 0;
  double near = 0.01;    // the projection ops
  int64_t channels = 0;  // Rasterize ops: C
  int64_t capacity = 0;  // TileBin: gaussian_ids' length (its attribute); Rasterize ops: that
                         // of the gaussian_ids they are given
  int64_t tiles_x() const { return (width + 15) / 16; }
  int64_t tiles_y() const { return (height + 15) / 16; }
  int64_t tiles() const { return tiles_x() * tiles_y(); }
};

// The source of the module the call with `shape` builds (splat_call.cpp launches its kernels by
// the names above).
std::string splat_kernel_source(const SplatCallShape& shape);

}  // namespace rlx::cuda
