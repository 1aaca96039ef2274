// The CUDA text of Rasterize and its backward op (splat_cuda_kernels.cpp puts the module together;
// splat_cuda_text.h names the pieces). The arithmetic follows the cpu's kernels operation for
// operation, as splat_cuda_kernels.h says.
#include "splat_cuda_text.h"

namespace rlx::cuda::splat_text {

// Rasterize and its backward: one block per 16x16 tile, one thread per pixel; the tile's
// Gaussians pass through shared memory kBlock at a time.
extern const char* const kRasterCommon = R"(
constexpr double kMinAlpha = 1.0 / 255;
constexpr double kMaxAlpha = 0.99;
constexpr double kMinT = 1e-4;

// A Gaussian of the batch; id -1: not one (a bad entry of gaussian_ids, reported).
struct Splat {
  T mx, my, ca, cb, cc, o;
  int id;
};

// Tile `tile`'s list, [begin, end) of gaussian_ids; an empty one (reported) when the offsets are
// not TileBin's.
__device__ void tile_range(const int* offsets, int tile, u64* status, int* begin, int* end) {
  const int b = offsets[tile], e = offsets[tile + 1];
  if (0 <= b && b <= e && e <= kCapacity) {
    *begin = b, *end = e;
    return;
  }
  if (threadIdx.x == 0) report(status, kBadOffsets, tile, (u64)(long long)b, (u64)(long long)e);
  *begin = *end = 0;
}

// Thread j of the block loads the Gaussian at position first + j of gaussian_ids (when < end).
__device__ void load_batch(Splat* batch, int first, int end, const T* means2d, const T* conics,
                           const T* opacities, const int* ids, u64* status) {
  const int k = first + threadIdx.x;
  if (k >= end) return;
  Splat s;
  s.id = ids[k];
  if (s.id < 0 || s.id >= kN) {
    report(status, kBadId, k, (u64)(long long)s.id, 0);
    s.id = -1;
  } else {
    s.mx = means2d[2 * s.id], s.my = means2d[2 * s.id + 1];
    s.ca = conics[3 * s.id], s.cb = conics[3 * s.id + 1], s.cc = conics[3 * s.id + 2];
    s.o = opacities[s.id];
  }
  batch[threadIdx.x] = s;
}

// sigma of a Gaussian at offset (dx, dy) from its mean.
__device__ __forceinline__ T sigma_of(const Splat& s, T dx, T dy) {
  return T(0.5) * (s.ca * dx * dx + s.cc * dy * dy) + s.cb * dx * dy;
}
)";

// The cpu skips a Gaussian whose sigma is beyond log(255 o) (+ a margin) before taking exp; that
// test only saves work, except that it also skips every Gaussian whose opacity is not > 0 (NaN
// included), which `!(s.o > 0)` keeps here.
extern const char* const kRasterize = R"(
extern "C" __global__ void __launch_bounds__(256)
    rasterize(const T* means2d, const T* conics, const T* colors, const T* opacities,
              const T* background, const int* offsets, const int* ids, T* image, T* final_t,
              int* last_index, u64* status) {
  if (!block_ok(status)) return;
  __shared__ Splat batch[kBlock];
  const int tile = blockIdx.x, tid = threadIdx.x;
  const int px = tile % kTilesX * kTile + tid % kTile, py = tile / kTilesX * kTile + tid / kTile;
  const bool inside = px < kWidth && py < kHeight;
  const T x = T(px + 0.5), y = T(py + 0.5);
  int begin, end;
  tile_range(offsets, tile, status, &begin, &end);
  T trans = 1, acc[kCMax];
  for (int c = 0; c < kCMax; ++c) acc[c] = 0;
  int last = -1;
  bool done = !inside;
  for (int first = begin; first < end; first += kBlock) {
    // Also the barrier before the batch is overwritten: every pixel has finished the last one.
    if (__syncthreads_count(done) == kBlock) break;
    load_batch(batch, first, end, means2d, conics, opacities, ids, status);
    __syncthreads();
    const int n = min(kBlock, end - first);
    for (int j = 0; j < n && !done; ++j) {
      const Splat& s = batch[j];
      if (s.id < 0) continue;
      const T dx = s.mx - x, dy = s.my - y;
      const T sigma = sigma_of(s, dx, dy);
      if (sigma < 0 || !(s.o > 0)) continue;
      const T raw = s.o * exp_t(-sigma);
      const T alpha = raw < T(kMaxAlpha) ? raw : T(kMaxAlpha);  // std::min(0.99, raw)
      if (alpha < T(kMinAlpha)) continue;
      const T next = trans * (1 - alpha);
      if (next <= T(kMinT)) {
        done = true;
        break;
      }
      const T* col = colors + (long long)s.id * kC;
      for (int c = 0; c < kC; ++c) acc[c] += col[c] * alpha * trans;
      trans = next;
      last = first + j;
    }
  }
  if (!inside) return;
  const long long pix = (long long)py * kWidth + px;
  for (int c = 0; c < kC; ++c) image[pix * kC + c] = acc[c] + trans * background[c];
  final_t[pix] = trans;
  last_index[pix] = last;
}
)";

// Back to front from each pixel's last index, recovering T before each Gaussian as
// T / (1 - alpha), as the cpu does. A Gaussian's gradient is summed over the warp's pixels and
// added to its entries with atomicAdd: the order of the additions differs from the cpu's (which
// sums per (tile, Gaussian) pair and then over the pairs), so sums agree to rounding only.
extern const char* const kRasterizeBackward = R"(
extern "C" __global__ void __launch_bounds__(256)
    rasterize_backward(const T* means2d, const T* conics, const T* colors, const T* opacities,
                       const T* background, const int* offsets, const int* ids,
                       const T* final_t, const int* last_index, const T* d_image,
                       const T* d_final_t, T* d_means2d, T* d_conics, T* d_colors,
                       T* d_opacities, T* d_background, u64* status) {
  if (!block_ok(status)) return;
  __shared__ Splat batch[kBlock];
  __shared__ int top;
  const int tile = blockIdx.x, tid = threadIdx.x, lane = tid & 31;
  const int px = tile % kTilesX * kTile + tid % kTile, py = tile / kTilesX * kTile + tid / kTile;
  const bool inside = px < kWidth && py < kHeight;
  const T x = T(px + 0.5), y = T(py + 0.5);
  int begin, end;
  tile_range(offsets, tile, status, &begin, &end);
  T trans = 0, dft = 0, v[kCMax], behind[kCMax];
  for (int c = 0; c < kCMax; ++c) v[c] = 0, behind[c] = 0;
  int last = -1;
  if (inside) {
    const long long pix = (long long)py * kWidth + px;
    const T ft = final_t[pix];
    trans = ft;
    dft = d_final_t[pix] * ft;
    last = last_index[pix];
    if (last != -1 && (last < begin || last >= end)) {
      report(status, kBadLast, pix, (u64)(long long)last, 0);
      last = -1;
    }
    for (int c = 0; c < kC; ++c) {
      v[c] = d_image[pix * kC + c];
      behind[c] = ft * background[c];
    }
  }
  // d background = sum over pixels of d_image * final_T.
  for (int c = 0; c < kC; ++c) {
    const T g = warp_sum(inside ? v[c] * trans : T(0));
    if (lane == 0) atomic_add(&d_background[c], g);
  }
  if (tid == 0) top = -1;
  __syncthreads();
  if (last >= 0) atomicMax(&top, last);
  __syncthreads();
  for (int stop = top + 1; stop > begin; stop -= kBlock) {
    const int first = max(begin, stop - kBlock);
    __syncthreads();  // every pixel has finished the last batch
    load_batch(batch, first, stop, means2d, conics, opacities, ids, status);
    __syncthreads();
    for (int j = stop - first - 1; j >= 0; --j) {
      const Splat s = batch[j];
      if (s.id < 0) continue;
      // Per pixel: 0, 1 mean; 2-4 conic; 5 opacity; 6.. colour.
      T g[6 + kCMax];
      for (int q = 0; q < 6 + kCMax; ++q) g[q] = 0;
      bool hit = false;
      if (first + j <= last) {
        const T dx = s.mx - x, dy = s.my - y;
        const T sigma = sigma_of(s, dx, dy);
        if (!(sigma < 0) && s.o > 0) {
          const T vis = exp_t(-sigma);
          const T raw = s.o * vis;
          const T alpha = raw < T(kMaxAlpha) ? raw : T(kMaxAlpha);
          if (!(alpha < T(kMinAlpha))) {
            hit = true;
            const T before = trans / (1 - alpha);
            // d pixel / d alpha = c T_before - (what lies behind) / (1 - alpha); final T alike.
            T d_alpha = -dft / (1 - alpha);
            const T* col = colors + (long long)s.id * kC;
            for (int c = 0; c < kC; ++c) {
              const T vc = v[c];
              d_alpha += vc * (col[c] * before - behind[c] / (1 - alpha));
              g[6 + c] = alpha * before * vc;
              behind[c] += col[c] * alpha * before;
            }
            trans = before;
            if (!(raw > T(kMaxAlpha))) {  // clamped: alpha does not move with o or sigma
              g[5] = vis * d_alpha;
              const T d_sigma = -alpha * d_alpha;
              g[0] = (s.ca * dx + s.cb * dy) * d_sigma;
              g[1] = (s.cb * dx + s.cc * dy) * d_sigma;
              g[2] = T(0.5) * dx * dx * d_sigma;
              g[3] = dx * dy * d_sigma;
              g[4] = T(0.5) * dy * dy * d_sigma;
            }
          }
        }
      }
      if (!__any_sync(0xffffffffu, hit)) continue;
      for (int q = 0; q < 6 + kC; ++q) g[q] = warp_sum(g[q]);
      if (lane != 0) continue;
      const long long id = s.id;
      atomic_add(&d_means2d[2 * id], g[0]);
      atomic_add(&d_means2d[2 * id + 1], g[1]);
      for (int q = 0; q < 3; ++q) atomic_add(&d_conics[3 * id + q], g[2 + q]);
      atomic_add(&d_opacities[id], g[5]);
      for (int c = 0; c < kC; ++c) atomic_add(&d_colors[id * kC + c], g[6 + c]);
    }
  }
}
)";

}  // namespace rlx::cuda::splat_text
