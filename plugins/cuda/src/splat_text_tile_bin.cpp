// The CUDA text of TileBin: counts, scan, fill, per-tile sort (splat_cuda_kernels.cpp puts the
// module together; splat_cuda_text.h names the pieces). The arithmetic follows the cpu's kernels
// operation for operation, as splat_cuda_kernels.h says.
#include "splat_cuda_text.h"

namespace rlx::cuda::splat_text {

// TileBin: per-tile counts, their scan into tile_offsets, a fill of each tile's list (in any
// order), then one block per tile sorting its list by (depth, Gaussian index), which is a total
// order: the lists come out exactly as the cpu's std::sort makes them, whatever order the fill's
// atomics gave.
extern const char* const kTileBin = R"(
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

}  // namespace rlx::cuda::splat_text
