// Matrix products through cuBLASLt (cublaslt.h): which products it takes, and each one planned
// once (layouts, the heuristic's algorithm) and enqueued on the device's stream on every run.
// cuBLASLt computes row-major C = A x B as the column-major product C^T = B^T x A^T, so a
// transposed operand (a Linear layer's [out, in] weight) is a transpose flag, never a copy.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "cublaslt.h"
#include "device_api.h"

namespace rlx::cuda {

// "cuBLASLt" when cuBLASLt computes `shape` on this machine: f32 x f32, f16 x f16 or bf16 x bf16
// with f32 accumulation (never TF32), C of A's dtype or f32, each operand contiguous along one of
// its two dims. "" otherwise (rlx's tiled kernel computes it), or when RLX_CUDA_GEMM=kernel asks
// for the tiled kernel everywhere.
std::string cublaslt_takes(const sdk::MatmulShape& shape);

// Whether `shape`'s algorithm is chosen by timing the heuristic's first eight rather than taken
// from its first: for small products (at most kTunedAlways multiply-adds), where a tiny dimension
// makes the first choice slow (on the H100 the heuristic's pick for a 10x128x128 product of a
// training step took 67 us, the fastest of eight 12 us) and timing them costs microseconds.
// RLX_CUDA_GEMM_TUNE=1 times every product, =0 none (bench/RESULTS.md: large products timed
// alone, their operands in L2, moved MiniLM by -11% to +14%).
inline constexpr int64_t kTunedAlways = int64_t{1} << 22;
bool cublaslt_tunes(const sdk::MatmulShape& shape);

// Bytes of each operand a product reads or writes, and scratch device memory of those sizes.
struct MatmulBytes {
  size_t a = 0, b = 0, c = 0, bias = 0, residual = 0;  // bias and residual: 0 when not added
};
struct MatmulOperands {
  CuDevicePtr a = 0, b = 0, c = 0, bias = 0, residual = 0;
};
// Chooses among `count` candidate algorithms of one product: `run(i, operands)` enqueues
// candidate i once on scratch operands of `bytes`, and may throw when the candidate cannot run.
// Returns the index of the one to keep (the device times them: cuda_device.cpp).
using MatmulTuner = std::function<int(
    int count, const MatmulBytes& bytes,
    const std::function<void(int, const MatmulOperands&)>& run)>;

// Planned for `shape` (which cublaslt_takes accepted) on `stream`, with the device's workspace;
// `epilogue`'s bias is cuBLASLt's BIAS epilogue, its residual the product's C with beta = 1.
// With a tuner, the heuristic's first eight algorithms are its candidates; without one, its
// first.
// Throws rlx::Error (kCompile) when cuBLASLt has no algorithm for it.
std::unique_ptr<gpu_host::VendorMatmul> plan_cublaslt(const CublasLtApi& lt, CublasLtHandle handle,
                                                      CuStream stream, CuDevicePtr workspace,
                                                      size_t workspace_bytes,
                                                      const sdk::MatmulShape& shape,
                                                      const gpu_host::VendorEpilogue& epilogue,
                                                      const MatmulTuner* tuner = nullptr);

}  // namespace rlx::cuda
