// A probe for issue 14's decode goal, not part of rlx: would a decode step's products run faster
// if the latency-bound kernels before each one (norms, scatters, attention: a few us each,
// reading little) prefetched that product's weights into L2? A decode step is a chain of ~70
// kernels where the weight-reading GEMVs reach 0.5-1.6 TB/s of a ~3 TB/s copy bandwidth
// (bench/RESULTS.md, "cuda decode: where a step's time goes"); their reads start cold.
//
// Timed per trial, after a 256 MB pass that evicts L2: a chain of `chain` small kernels (16
// blocks, an RMS of a 1024 row each, as a decode norm), then a warp-per-row GEMV of a [rows,
// 1024] f16 weight (16-byte loads, f32 sums). The first small kernel prefetches the weight:
//   none      no prefetch;
//   lines     every thread issues prefetch.global.L2 for its share of the 128-byte lines;
//   bulk      one thread a block issues cp.async.bulk.prefetch.L2 for its share in 64 KB pieces.
// Bounds beside them: the GEMV alone cold (after the eviction) and warm (L2 holding the weight).
// CUDA events around the chain and the GEMV, median of 50 trials. Written 2026-12-07 and compiled
// for sm_90 here; the session's device time ran out before it ran on a GPU.
//   nvcc -O3 -arch=sm_90 -o /tmp/l2_probe bench/gpu/l2_prefetch_probe.cu && /tmp/l2_probe
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void evict(const float4* buf, size_t n, float* sink) {
  float4 acc = make_float4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float4 v = buf[i];
    acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
  }
  if (acc.x + acc.y + acc.z + acc.w == 12345.0f) *sink = acc.x;
}

// mode 0 none, 1 lines, 2 bulk
__global__ void small(const float* x, float* y, const char* w, size_t bytes, int mode) {
  if (mode == 1) {
    const size_t threads = (size_t)gridDim.x * blockDim.x;
    for (size_t l = blockIdx.x * blockDim.x + threadIdx.x; l < bytes / 128; l += threads)
      asm volatile("prefetch.global.L2 [%0];" ::"l"(w + l * 128));
  } else if (mode == 2 && threadIdx.x == 0) {
    const size_t piece = 65536, pieces = (bytes + piece - 1) / piece;
    for (size_t p = blockIdx.x; p < pieces; p += gridDim.x) {
      const size_t at = p * piece;
      const unsigned n = (unsigned)(bytes - at < piece ? bytes - at : piece);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(w + at), "r"(n) : "memory");
    }
  }
  __shared__ float part[256];
  const float* row = x + blockIdx.x * 1024;
  float s = 0;
  for (int i = threadIdx.x; i < 1024; i += 256) s += row[i] * row[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  const float r = rsqrtf(part[0] / 1024 + 1e-6f);
  for (int i = threadIdx.x; i < 1024; i += 256) y[blockIdx.x * 1024 + i] = row[i] * r;
}

// y[rows] = W [rows, 1024] x, a warp a row, 8 rows a block.
__global__ void gemv(const uint4* w, const float* x, float* y, int rows) {
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row = blockIdx.x * 8 + warp;
  if (row >= rows) return;
  float acc = 0;
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const int v = lane + 32 * t;  // 128 vectors of 8 halves a row
    const uint4 q = w[(size_t)row * 128 + v];
    const __half2* h = reinterpret_cast<const __half2*>(&q);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = __half22float2(h[e]);
      acc += f.x * x[v * 8 + 2 * e] + f.y * x[v * 8 + 2 * e + 1];
    }
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = acc;
}

int main() {
  const size_t evict_bytes = size_t(256) << 20;
  float4* big;
  float *sink, *x, *y, *xs, *ys;
  CHECK(cudaMalloc(&big, evict_bytes));
  CHECK(cudaMemset(big, 0, evict_bytes));
  CHECK(cudaMalloc(&sink, 4));
  CHECK(cudaMalloc(&xs, 16 * 1024 * 4));
  CHECK(cudaMalloc(&ys, 16 * 1024 * 4));
  CHECK(cudaMemset(xs, 0, 16 * 1024 * 4));
  CHECK(cudaMalloc(&x, 1024 * 4));
  CHECK(cudaMemset(x, 0, 1024 * 4));
  CHECK(cudaMalloc(&y, 32768 * 4));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::printf(
      "| weight | chain | GEMV alone, cold (us) | GEMV alone, in L2 (us) | chain + GEMV: none | "
      "lines | bulk |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (int rows : {1024, 2048, 6144}) {
    const size_t bytes = size_t(rows) * 1024 * 2;
    char* w;
    CHECK(cudaMalloc(&w, bytes));
    CHECK(cudaMemset(w, 0, bytes));
    for (int chain : {1, 3}) {
      auto median_us = [&](auto&& before, auto&& timed) {
        std::vector<float> t;
        for (int i = 0; i < 50; ++i) {
          before();
          CHECK(cudaEventRecord(e0));
          timed();
          CHECK(cudaEventRecord(e1));
          CHECK(cudaEventSynchronize(e1));
          float ms;
          CHECK(cudaEventElapsedTime(&ms, e0, e1));
          t.push_back(ms * 1000);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
      };
      auto cold = [&] { evict<<<528, 256>>>(big, evict_bytes / 16, sink); };
      auto run_gemv = [&] { gemv<<<(rows + 7) / 8, 256>>>((const uint4*)w, x, y, rows); };
      const float alone_cold = median_us(cold, run_gemv);
      const float alone_warm = median_us(run_gemv, run_gemv);
      float with[3];
      for (int mode = 0; mode < 3; ++mode)
        with[mode] = median_us(cold, [&] {
          for (int c = 0; c < chain; ++c) small<<<16, 256>>>(xs, ys, w, bytes, c == 0 ? mode : 0);
          run_gemv();
        });
      std::printf("| %d x 1024 f16 (%.1f MB) | %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", rows,
                  bytes / 1e6, chain, alone_cold, alone_warm, with[0], with[1], with[2]);
    }
    CHECK(cudaFree(w));
  }
  CHECK(cudaDeviceSynchronize());
  return 0;
}
