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

// ProjectGaussians' per-Gaussian computation, all in f64 as on the cpu (splat_project.cpp).
constexpr const char* kProjectOne = R"(
constexpr double kLowPass = 0.3;  // pixels^2 added to the 2D covariance's diagonal

struct M3 {
  double v[3][3];
};

__device__ M3 mul(const M3& a, const M3& b) {
  M3 c;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a.v[i][k] * b.v[k][j];
      c.v[i][j] = s;
    }
  return c;
}

__device__ M3 transposed(const M3& a) {
  M3 t;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) t.v[i][j] = a.v[j][i];
  return t;
}

// The view's rotation W and translation t.
struct Camera {
  M3 w;
  double t[3];
};

__device__ Camera camera_of(const T* view) {
  Camera c;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) c.w.v[i][j] = view[i * 4 + j];
    c.t[i] = view[i * 4 + 3];
  }
  return c;
}

struct Projected {
  bool visible;
  double x, y, z;  // camera space
  double qn[4];    // the normalised quaternion
  double qnorm;
  M3 rot, m, cov;        // R, M = R diag(s), W Sigma W^T
  double a, b, c, det;   // the 2D covariance, low-pass included
  double mx, my;
  int radius;
  long long tiles;
};

__device__ Projected project_one(long long i, const T* means, const T* scales, const T* quats,
                                 const Camera& cam, const T* k) {
  Projected p = {};
  const T* mean = means + 3 * i;
  const T* scale = scales + 3 * i;
  const T* q = quats + 4 * i;
  const M3& w = cam.w;
  p.x = w.v[0][0] * mean[0] + w.v[0][1] * mean[1] + w.v[0][2] * mean[2] + cam.t[0];
  p.y = w.v[1][0] * mean[0] + w.v[1][1] * mean[1] + w.v[1][2] * mean[2] + cam.t[1];
  p.z = w.v[2][0] * mean[0] + w.v[2][1] * mean[1] + w.v[2][2] * mean[2] + cam.t[2];
  if (!(p.z >= near_plane())) return p;
  p.qnorm = sqrt((double)q[0] * q[0] + (double)q[1] * q[1] + (double)q[2] * q[2] +
                 (double)q[3] * q[3]);
  if (!(p.qnorm > 0)) return p;
  for (int j = 0; j < 4; ++j) p.qn[j] = q[j] / p.qnorm;
  const double qw = p.qn[0], qx = p.qn[1], qy = p.qn[2], qz = p.qn[3];
  p.rot.v[0][0] = 1 - 2 * (qy * qy + qz * qz);
  p.rot.v[0][1] = 2 * (qx * qy - qw * qz);
  p.rot.v[0][2] = 2 * (qx * qz + qw * qy);
  p.rot.v[1][0] = 2 * (qx * qy + qw * qz);
  p.rot.v[1][1] = 1 - 2 * (qx * qx + qz * qz);
  p.rot.v[1][2] = 2 * (qy * qz - qw * qx);
  p.rot.v[2][0] = 2 * (qx * qz - qw * qy);
  p.rot.v[2][1] = 2 * (qy * qz + qw * qx);
  p.rot.v[2][2] = 1 - 2 * (qx * qx + qy * qy);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 3; ++j) p.m.v[r][j] = p.rot.v[r][j] * scale[j];
  const M3 wm = mul(w, p.m);
  p.cov = mul(wm, transposed(wm));
  const double fx = k[0], fy = k[1], iz = 1 / p.z;
  const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz,
               j12 = -fy * p.y * iz * iz;
  const M3& s = p.cov;
  // J S J^T with J = [[j00, 0, j02], [0, j11, j12]].
  p.a = j00 * j00 * s.v[0][0] + 2 * j00 * j02 * s.v[0][2] + j02 * j02 * s.v[2][2] + kLowPass;
  p.b = j00 * j11 * s.v[0][1] + j00 * j12 * s.v[0][2] + j02 * j11 * s.v[2][1] +
        j02 * j12 * s.v[2][2];
  p.c = j11 * j11 * s.v[1][1] + 2 * j11 * j12 * s.v[1][2] + j12 * j12 * s.v[2][2] + kLowPass;
  p.det = p.a * p.c - p.b * p.b;
  if (!(p.det > 0)) return p;
  const double mid = 0.5 * (p.a + p.c);
  const double spread = mid * mid - p.det;
  const double lambda = mid + sqrt(0.1 < spread ? spread : 0.1);  // std::max(0.1, spread)
  p.radius = to_int(ceil(3 * sqrt(lambda)));
  p.mx = fx * p.x * iz + k[2];
  p.my = fy * p.y * iz + k[3];
  p.tiles = tile_rect(p.mx, p.my, p.radius).count();
  p.visible = p.tiles > 0;
  return p;
}
)";

constexpr const char* kProject = R"(
// One thread per Gaussian; a culled one gets zeros (and radius 0).
extern "C" __global__ void project(const T* means, const T* scales, const T* quats, const T* view,
                                   const T* intr, T* means2d, T* conics, T* depths, int* radii,
                                   int* tile_counts) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN) return;
  Projected p = project_one(i, means, scales, quats, camera_of(view), intr);
  if (!p.visible) p = Projected{};
  means2d[2 * i] = T(p.mx);
  means2d[2 * i + 1] = T(p.my);
  const double inv = p.visible ? 1 / p.det : 0;
  conics[3 * i] = T(p.c * inv);
  conics[3 * i + 1] = T(-p.b * inv);
  conics[3 * i + 2] = T(p.a * inv);
  depths[i] = T(p.z * p.visible);
  radii[i] = p.radius;
  tile_counts[i] = (int)p.tiles;
}
)";

constexpr const char* kProjectBackward = R"(
// One thread per Gaussian: the forward computation again, then the chain rule back through the
// conic, J, the camera and the quaternion's normalisation (splat_project.cpp's derivation).
extern "C" __global__ void project_backward(const T* means, const T* scales, const T* quats,
                                            const T* view, const T* intr, const int* radii,
                                            const T* d_means2d, const T* d_conics,
                                            const T* d_depths, T* d_means, T* d_scales,
                                            T* d_quats) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN) return;
  for (int j = 0; j < 3; ++j) d_means[3 * i + j] = T(0), d_scales[3 * i + j] = T(0);
  for (int j = 0; j < 4; ++j) d_quats[4 * i + j] = T(0);
  if (radii[i] <= 0) return;
  const Camera cam = camera_of(view);
  const Projected p = project_one(i, means, scales, quats, cam, intr);
  if (!p.visible) return;
  const M3& w = cam.w;
  const double fx = intr[0], fy = intr[1], iz = 1 / p.z;
  // Conic (A, B, C) = (c, -b, a) / det: back to the covariance entries a, b, c.
  const double dA = d_conics[3 * i], dB = d_conics[3 * i + 1], dC = d_conics[3 * i + 2];
  const double a2 = p.a, b2 = p.b, c2 = p.c, id2 = 1 / (p.det * p.det);
  const double da = (-dA * c2 * c2 + dB * b2 * c2 - dC * b2 * b2) * id2;
  const double db = (2 * dA * b2 * c2 - dB * (p.det + 2 * b2 * b2) + 2 * dC * a2 * b2) * id2;
  const double dc = (-dA * b2 * b2 + dB * a2 * b2 - dC * a2 * a2) * id2;
  const double g00 = da, g01 = 0.5 * db, g11 = dc;
  const double j00 = fx * iz, j02 = -fx * p.x * iz * iz, j11 = fy * iz,
               j12 = -fy * p.y * iz * iz;
  const double J[2][3] = {{j00, 0, j02}, {0, j11, j12}};
  const double G[2][2] = {{g00, g01}, {g01, g11}};
  // dS = J^T G J; dJ = 2 G J S.
  M3 dS;
  for (int u = 0; u < 3; ++u)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) s += J[r][u] * G[r][c] * J[c][v];
      dS.v[u][v] = s;
    }
  double GJ[2][3], dJ[2][3];
  for (int r = 0; r < 2; ++r)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int c = 0; c < 2; ++c) s += G[r][c] * J[c][v];
      GJ[r][v] = s;
    }
  for (int r = 0; r < 2; ++r)
    for (int v = 0; v < 3; ++v) {
      double s = 0;
      for (int u = 0; u < 3; ++u) s += 2 * GJ[r][u] * p.cov.v[u][v];
      dJ[r][v] = s;
    }
  const double dmx = d_means2d[2 * i], dmy = d_means2d[2 * i + 1];
  const double dx = dJ[0][2] * (-fx * iz * iz) + dmx * fx * iz;
  const double dy = dJ[1][2] * (-fy * iz * iz) + dmy * fy * iz;
  const double dz = dJ[0][0] * (-fx * iz * iz) + dJ[0][2] * (2 * fx * p.x * iz * iz * iz) +
                    dJ[1][1] * (-fy * iz * iz) + dJ[1][2] * (2 * fy * p.y * iz * iz * iz) -
                    dmx * fx * p.x * iz * iz - dmy * fy * p.y * iz * iz + (double)d_depths[i];
  for (int j = 0; j < 3; ++j)
    d_means[3 * i + j] = T(w.v[0][j] * dx + w.v[1][j] * dy + w.v[2][j] * dz);
  // Sigma = M M^T seen as W Sigma W^T: dSigma = W^T dS W, dM = 2 dSigma M.
  const M3 dsigma = mul(transposed(w), mul(dS, w));
  const M3 dm = mul(dsigma, p.m);
  M3 dr;
  T ds[3] = {T(0), T(0), T(0)};  // summed in T, as the cpu sums into its output
  for (int u = 0; u < 3; ++u)
    for (int j = 0; j < 3; ++j) {
      dr.v[u][j] = 2 * dm.v[u][j] * scales[3 * i + j];
      ds[j] += T(2 * dm.v[u][j] * p.rot.v[u][j]);
    }
  for (int j = 0; j < 3; ++j) d_scales[3 * i + j] = ds[j];
  const double qw = p.qn[0], qx = p.qn[1], qy = p.qn[2], qz = p.qn[3];
  const double (&r)[3][3] = dr.v;
  const double dq[4] = {
      2 * (-qz * r[0][1] + qy * r[0][2] + qz * r[1][0] - qx * r[1][2] - qy * r[2][0] +
           qx * r[2][1]),
      2 * (qy * r[0][1] + qz * r[0][2] + qy * r[1][0] - 2 * qx * r[1][1] - qw * r[1][2] +
           qz * r[2][0] + qw * r[2][1] - 2 * qx * r[2][2]),
      2 * (-2 * qy * r[0][0] + qx * r[0][1] + qw * r[0][2] + qx * r[1][0] + qz * r[1][2] -
           qw * r[2][0] + qz * r[2][1] - 2 * qy * r[2][2]),
      2 * (-2 * qz * r[0][0] - qw * r[0][1] + qx * r[0][2] + qw * r[1][0] - 2 * qz * r[1][1] +
           qy * r[1][2] + qx * r[2][0] + qy * r[2][1])};
  // Through the normalisation q / |q|.
  const double dot = qw * dq[0] + qx * dq[1] + qy * dq[2] + qz * dq[3];
  for (int j = 0; j < 4; ++j) d_quats[4 * i + j] = T((dq[j] - p.qn[j] * dot) / p.qnorm);
}
)";

// TileBin: per-tile counts, their scan into tile_offsets, a fill of each tile's list (in any
// order), then one block per tile sorting its list by (depth, Gaussian index), which is a total
// order: the lists come out exactly as the cpu's std::sort makes them, whatever order the fill's
// atomics gave.
constexpr const char* kTileBin = R"(
// Each Gaussian adds one to every tile of its rectangle.
extern "C" __global__ void bin_count(const T* means2d, const int* radii, unsigned* counts) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN || radii[i] <= 0) return;
  const TileRect r = tile_rect(means2d[2 * i], means2d[2 * i + 1], radii[i]);
  for (int ty = r.y0; ty < r.y1; ++ty)
    for (int tx = r.x0; tx < r.x1; ++tx) atomicAdd(&counts[ty * kTilesX + tx], 1u);
}

// One block: tile_offsets from the counts, which become each tile's fill cursor. More pairs than
// the capacity (or than i32 offsets hold) is reported, and every offset is then 0, so the kernels
// after this one, and a Rasterize reading these lists, see empty tiles and touch no memory.
extern "C" __global__ void __launch_bounds__(256)
    bin_scan(unsigned* counts, int* offsets, u64* status) {
  if (!block_ok(status)) return;
  __shared__ u64 warp_totals[kBlock / 32];
  const int per = (kTiles + kBlock - 1) / kBlock;
  const int lo = min(kTiles, (int)threadIdx.x * per), hi = min(kTiles, lo + per);
  u64 mine = 0;
  for (int t = lo; t < hi; ++t) mine += counts[t];
  u64 pairs = 0;
  u64 run = block_exclusive_scan(mine, warp_totals, &pairs);
  const bool over = pairs > (u64)kCapacity, huge = pairs > 2147483647ULL;
  if (threadIdx.x == 0 && (over || huge))
    report(status, over ? kOverCapacity : kTooManyPairs, pairs, 0, 0);
  for (int t = lo; t < hi; ++t) {
    const unsigned c = counts[t];
    offsets[t] = over || huge ? 0 : (int)run;
    counts[t] = (unsigned)run;
    run += c;
  }
  if (threadIdx.x == 0) offsets[kTiles] = over || huge ? 0 : (int)pairs;
}

// Each Gaussian appends itself to its tiles' lists (the order within a list is sorted later).
extern "C" __global__ void bin_fill(const T* means2d, const int* radii, unsigned* cursors,
                                    int* ids, const u64* status) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kN || radii[i] <= 0 || status[0] != 0) return;
  const TileRect r = tile_rect(means2d[2 * i], means2d[2 * i + 1], radii[i]);
  for (int ty = r.y0; ty < r.y1; ++ty)
    for (int tx = r.x0; tx < r.x1; ++tx) ids[atomicAdd(&cursors[ty * kTilesX + tx], 1u)] = (int)i;
}

// The depth as an unsigned key ordered as the float is (-0 taken as +0, which compares equal).
__device__ __forceinline__ u64 depth_key(float d) {
  if (d == 0.0f) d = 0.0f;
  const unsigned b = __float_as_uint(d);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ u64 depth_key(double d) {
  if (d == 0.0) d = 0.0;
  const u64 b = (u64)__double_as_longlong(d);
  return (b >> 63) ? ~b : (b | (1ULL << 63));
}

constexpr int kSmallList = 1024;  // lists up to this long are sorted by counting ranks

// A short list: every element's position is the number of elements before it in the order.
__device__ void rank_sort(const T* depths, int* list, int n) {
  __shared__ u64 keys[kSmallList];
  __shared__ int who[kSmallList];
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const int id = list[j];
    who[j] = id;
    keys[j] = depth_key(depths[id]);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += kBlock) {
    const u64 key = keys[j];
    const int id = who[j];
    int at = 0;
    for (int m = 0; m < n; ++m) at += keys[m] < key || (keys[m] == key && who[m] < id);
    list[at] = id;
  }
}

// Digit `pass` of the key (depth key, Gaussian index): passes 0-3 are the index's bytes, the
// rest the depth key's, least significant first.
__device__ __forceinline__ unsigned digit_of(int id, int pass, const T* depths) {
  if (pass < 4) return ((unsigned)id >> (8 * pass)) & 255u;
  return (unsigned)(depth_key(depths[id]) >> (8 * (pass - 4))) & 255u;
}

// A long list: a least-significant-digit radix sort by the block, 8 bits a pass, between the
// list and its slice of the scratch buffer. Each pass is stable (within a round of kBlock
// elements a digit's elements keep their order through warp ballots), and a pass whose digit is
// the same for every element is skipped.
__device__ void radix_sort(const T* depths, int* list, int* spare, int n) {
  __shared__ u64 and_key, or_key;
  __shared__ unsigned and_id, or_id;
  __shared__ unsigned start[256];
  __shared__ unsigned warp_counts[kBlock / 32][256];
  __shared__ unsigned warp_totals[kBlock / 32];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) and_key = ~0ULL, or_key = 0, and_id = ~0u, or_id = 0;
  __syncthreads();
  u64 ak = ~0ULL, ok = 0;
  unsigned ai = ~0u, oi = 0;
  for (int j = tid; j < n; j += kBlock) {
    const int id = list[j];
    const u64 key = depth_key(depths[id]);
    ak &= key, ok |= key, ai &= (unsigned)id, oi |= (unsigned)id;
  }
  atomicAnd(&and_key, ak), atomicOr(&or_key, ok), atomicAnd(&and_id, ai), atomicOr(&or_id, oi);
  __syncthreads();
  const u64 vary_key = and_key ^ or_key;
  const unsigned vary_id = and_id ^ or_id;
  int* src = list;
  int* dst = spare;
  for (int pass = 0; pass < 4 + (int)sizeof(T); ++pass) {
    const unsigned varies = pass < 4 ? (vary_id >> (8 * pass)) & 255u
                                     : (unsigned)(vary_key >> (8 * (pass - 4))) & 255u;
    if (!varies) continue;
    start[tid] = 0;
    for (int w = 0; w < kBlock / 32; ++w) warp_counts[w][tid] = 0;
    __syncthreads();
    for (int j = tid; j < n; j += kBlock) atomicAdd(&start[digit_of(src[j], pass, depths)], 1u);
    __syncthreads();
    const unsigned count = start[tid];
    unsigned total = 0;
    const unsigned first = block_exclusive_scan(count, warp_totals, &total);
    start[tid] = first;
    __syncthreads();
    for (int round = 0; round < n; round += kBlock) {
      const int j = round + tid;
      const bool valid = j < n;
      const int id = valid ? src[j] : 0;
      const unsigned d = valid ? digit_of(id, pass, depths) : 0u;
      unsigned peers = __ballot_sync(0xffffffffu, valid);
      for (int bit = 0; bit < 8; ++bit) {
        const bool set = (d >> bit) & 1u;
        const unsigned with = __ballot_sync(0xffffffffu, set);
        peers &= set ? with : ~with;
      }
      const unsigned rank = __popc(peers & ((1u << lane) - 1u));
      if (valid && rank == 0) warp_counts[warp][d] = __popc(peers);
      __syncthreads();
      if (valid) {
        unsigned at = start[d] + rank;
        for (int w = 0; w < warp; ++w) at += warp_counts[w][d];
        dst[at] = id;
      }
      __syncthreads();
      unsigned moved = 0;
      for (int w = 0; w < kBlock / 32; ++w) moved += warp_counts[w][tid], warp_counts[w][tid] = 0;
      start[tid] += moved;
      __syncthreads();
    }
    int* t = src;
    src = dst;
    dst = t;
  }
  if (src != list)
    for (int j = tid; j < n; j += kBlock) list[j] = src[j];
}

// One block per tile sorts the tile's list by (depth, Gaussian index).
extern "C" __global__ void __launch_bounds__(256)
    bin_sort(const T* depths, const int* offsets, int* ids, int* scratch, u64* status) {
  if (!block_ok(status)) return;
  const int begin = offsets[blockIdx.x], n = offsets[blockIdx.x + 1] - begin;
  if (n <= 1) return;
  if (n <= kSmallList)
    rank_sort(depths, ids + begin, n);
  else
    radix_sort(depths, ids + begin, scratch + begin, n);
}

// The unused tail of gaussian_ids holds -1.
extern "C" __global__ void bin_tail(const int* offsets, int* ids) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < kCapacity && k >= offsets[kTiles]) ids[k] = -1;
}
)";

// Rasterize and its backward: one block per 16x16 tile, one thread per pixel; the tile's
// Gaussians pass through shared memory kBlock at a time.
constexpr const char* kRasterCommon = R"(
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
constexpr const char* kRasterize = R"(
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
constexpr const char* kRasterizeBackward = R"(
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
