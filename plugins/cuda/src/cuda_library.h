// The cuda target's kernel library: the CUDA-family one (sdk/lang/cuda_hip: the CUDA dialect,
// gather and scatter) with products of a few rows as its own warp GEMVs (warp_gemv.h), the other
// products cuBLASLt takes (sdk/cuda_host/cuda_matmul.h) as vendor calls, a Linear's bias row and
// residual included, dense linear algebra through cuSOLVER, and f16/bf16 attention on tensor cores. The rocm target's HIP library has no
// vendor products: its HIP-on-CUDA mode proves HIP kernels, so it runs them all.
#pragma once
#include <cstdlib>
#include <string>

#include "cuda_hip_library.h"
#include "cuda_matmul.h"
#include "library_calls.h"
#include "rlx/sdk/render.h"
#include "switches.h"
#include "decode_attention.h"
#include "tensor_core_attention.h"
#include "warp_gemv.h"

namespace rlx::cuda {

class CudaTargetLibrary final : public cuda_hip::CudaHipKernelLibrary {
 public:
  CudaTargetLibrary() : CudaHipKernelLibrary(sdk::cuda_dialect(), "CUDA C++") {}
  // Products of a few rows are the warp GEMV's (warp_gemv.h), the rest cuBLASLt's where it takes
  // them.
  std::string vendor_matmul(const sdk::MatmulShape& shape) const override {
    return warp_gemv_takes(shape) ? "" : cublaslt_takes(shape);
  }
  std::optional<sdk::MatmulKernel> own_matmul(const sdk::MatmulShape& shape) const override {
    return warp_gemv(shape);
  }
  bool vendor_adds_bias_and_residual() const override { return true; }
  // Dense linear algebra through cuSOLVER and cuBLAS, ... (library_calls.h).
  std::string vendor_call(const lir::CallKernel& call) const override {
    return library_call_vendor(call);
  }
  // f16 and bf16 attention on tensor cores (tensor_core_attention.h), decode steps a block per
  // query row (decode_attention.h); the rest the SDK renders.
  std::optional<sdk::AttentionKernel> own_attention(const sdk::AttentionShape& shape) const override {
    if (auto kernel = tensor_core_attention(shape)) return kernel;
    return decode_attention(shape);
  }
  // The k norm computed by the scatter after it only with
  // RLX_CUDA_NORMED_PROLOGUE=1 until it has run on a GPU (written and compiled for sm_90; the
  // other GPU-style targets run them against cpu).
  bool computes_norms() const override { return asked_for("RLX_CUDA_NORMED_PROLOGUE"); }
};

// The library's one instance (it holds no state).
inline const CudaTargetLibrary& cuda_target_library() {
  static const CudaTargetLibrary library;
  return library;
}

}  // namespace rlx::cuda
