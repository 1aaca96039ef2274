// The CUDA text of the splatting kernels. Each expression is written in the order the cpu's
// kernels evaluate it (a * b * c is (a * b) * c, sums start from 0 and run in the same order,
// the cpu's f64 intermediates stay f64), because with contraction off NVRTC then emits the same
// IEEE operations: the projection (+, *, /, sqrt, floor, ceil, all correctly rounded on both)
// should come out identical, and the rasterizer differs by expf/exp's last bits. Where the cpu
// relies on x86 behaviour (a double beyond int's range converts to INT_MIN), the text says so
// and does the same.
#include "splat_cuda_kernels.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "splat_cuda_text.h"

namespace rlx::cuda {

namespace {

// Types, the tile grid, reporting, and the helpers every op uses.
constexpr const char* kCommon = R"(
typedef unsigned long long u64;
constexpr int kTile = 16;
constexpr int kBlock = 256;
constexpr int kCMax = kC > 0 ? kC : 1;  // local arrays of C entries

// The first report of a run wins; the host reads the status after the run (check()).
__device__ void report(u64* status, u64 what, u64 a, u64 b, u64 c) {
  if (atomicCAS(status, 0ULL, what) == 0ULL) {
    status[1] = a;
    status[2] = b;
    status[3] = c;
  }
}

// The cooperative kernels are written for blocks of kBlock threads (one 16x16 tile each).
__device__ bool block_ok(u64* status) {
  if (blockDim.x == kBlock) return true;
  if (threadIdx.x == 0) report(status, kBadBlock, blockDim.x, 0, 0);
  return false;
}

// static_cast<int>(v) as the cpu target's x86-64 code computes it (cvttsd2si): a value beyond
// int's range, or NaN, becomes INT_MIN, where CUDA's conversion would saturate. A splat's radius
// and tile rectangle go through it, so a huge or broken Gaussian is culled as on the cpu.
__device__ __forceinline__ int to_int(double v) {
  return v > -2147483649.0 && v < 2147483648.0 ? (int)v : -2147483647 - 1;
}

// std::clamp(v, 0, hi).
__device__ __forceinline__ int clamp_to(int v, int hi) { return v < 0 ? 0 : (hi < v ? hi : v); }

struct TileRect {
  int x0, y0, x1, y1;
  __device__ long long count() const { return (long long)(x1 - x0) * (y1 - y0); }
};

// The tiles [x0, x1) x [y0, y1) a splat of `radius` pixels centred at (mx, my) touches.
__device__ TileRect tile_rect(double mx, double my, int radius) {
  TileRect r;
  r.x0 = clamp_to(to_int(floor((mx - radius) / kTile)), kTilesX);
  r.y0 = clamp_to(to_int(floor((my - radius) / kTile)), kTilesY);
  r.x1 = clamp_to(to_int(floor((mx + radius + kTile - 1) / kTile)), kTilesX);
  r.y1 = clamp_to(to_int(floor((my + radius + kTile - 1) / kTile)), kTilesY);
  if (r.x1 < r.x0) r.x1 = r.x0;
  if (r.y1 < r.y0) r.y1 = r.y0;
  return r;
}

__device__ __forceinline__ float exp_t(float x) { return expf(x); }
__device__ __forceinline__ double exp_t(double x) { return exp(x); }

__device__ __forceinline__ float atomic_add(float* at, float v) { return atomicAdd(at, v); }
__device__ __forceinline__ double atomic_add(double* at, double v) {
#if __CUDA_ARCH__ >= 600
  return atomicAdd(at, v);
#else
  // No native f64 atomicAdd before sm_60: a compare-and-swap loop.
  u64* bits = (u64*)at;
  u64 old = *bits, seen;
  do {
    seen = old;
    old = atomicCAS(bits, seen, __double_as_longlong(__longlong_as_double(seen) + v));
  } while (seen != old);
  return __longlong_as_double(old);
#endif
}

template <typename V>
__device__ __forceinline__ V warp_sum(V v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Exclusive prefix sum of v over the block's kBlock threads (all of them call it); *total gets
// the sum. warp_totals: shared, kBlock / 32 entries.
template <typename U>
__device__ U block_exclusive_scan(U v, U* warp_totals, U* total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  U x = v;
  for (int o = 1; o < 32; o <<= 1) {
    const U y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) warp_totals[warp] = x;
  __syncthreads();
  U before = 0, sum = 0;
  for (int w = 0; w < kBlock / 32; ++w) {
    if (w < warp) before += warp_totals[w];
    sum += warp_totals[w];
  }
  __syncthreads();  // warp_totals is free again
  *total = sum;
  return before + x - v;
}
)";

}  // namespace

std::string splat_kernel_source(const SplatCallShape& s) {
  const bool project = s.op == "ProjectGaussians" || s.op == "ProjectGaussiansBackward";
  // near as its bits, so that every double (inf and NaN too) reaches the kernel unchanged.
  const uint64_t near_bits = std::bit_cast<uint64_t>(s.near);
  std::string text = fmt::format(
      "// Gaussian splatting: {} in {}, N = {}, {}x{} pixels in {}x{} tiles of 16x16 (the cuda\n"
      "// target's splat_cuda_kernels.cpp).\n"
      "typedef {} T;\n"
      "constexpr long long kN = {}LL;\n"
      "constexpr int kWidth = {}, kHeight = {};\n"
      "constexpr int kTilesX = {}, kTilesY = {}, kTiles = {};\n"
      "constexpr int kC = {};\n"
      "constexpr long long kCapacity = {}LL;\n"
      "__device__ __forceinline__ double near_plane() {{\n"
      "  return __longlong_as_double((long long)0x{:016x}ULL);\n"
      "}}\n"
      "enum : unsigned long long {{ kOverCapacity = {}, kTooManyPairs = {}, kBadOffsets = {}, "
      "kBadId = {}, kBadLast = {}, kBadBlock = {} }};\n",
      s.op, s.f64 ? "f64" : "f32", s.gaussians, s.width, s.height, s.tiles_x(), s.tiles_y(),
      s.f64 ? "double" : "float", s.gaussians, s.width, s.height, s.tiles_x(), s.tiles_y(),
      s.tiles(), s.channels, s.capacity, near_bits,
      static_cast<uint64_t>(SplatStatus::kOverCapacity),
      static_cast<uint64_t>(SplatStatus::kTooManyPairs),
      static_cast<uint64_t>(SplatStatus::kBadOffsets), static_cast<uint64_t>(SplatStatus::kBadId),
      static_cast<uint64_t>(SplatStatus::kBadLast), static_cast<uint64_t>(SplatStatus::kBadBlock));
  text += kCommon;
  using namespace splat_text;
  if (project) text += kProjectOne;
  if (s.op == "ProjectGaussians") text += kProject;
  if (s.op == "ProjectGaussiansBackward") text += kProjectBackward;
  if (s.op == "TileBin") text += kTileBin;
  if (s.op == "Rasterize" || s.op == "RasterizeBackward") text += kRasterCommon;
  if (s.op == "Rasterize") text += kRasterize;
  if (s.op == "RasterizeBackward") text += kRasterizeBackward;
  return text;
}

}  // namespace rlx::cuda

