// The cuBLASLt entry points the cuda target's matrix products use, resolved with dlopen on first
// use like the driver's (cuda_driver.h): the plugin builds without the CUDA toolkit, and a machine
// with a driver but no cuBLASLt still runs every product through rlx's own tiled kernel. The
// declarations are cuBLASLt's C ABI written out here: handles and descriptors are opaque
// pointers, enums plain integers with the values of cublasLt.h and library_types.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda_driver.h"

namespace rlx::cuda {

using CublasStatus = int;  // cublasStatus_t: 0 is CUBLAS_STATUS_SUCCESS
using CublasLtHandle = struct CublasLtOpaque*;
using CublasLtMatmulDesc = struct CublasLtMatmulDescOpaque*;
using CublasLtLayout = struct CublasLtLayoutOpaque*;
using CublasLtPreference = struct CublasLtPreferenceOpaque*;

// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t, as laid out in cublasLt.h.
struct CublasLtAlgo {
  uint64_t data[8];
};
struct CublasLtHeuristic {
  CublasLtAlgo algo;
  size_t workspace_bytes;
  CublasStatus state;
  float waves;
  int reserved[4];
};

inline constexpr CublasStatus kCublasSuccess = 0;
// cudaDataType_t.
inline constexpr int kCudaR32F = 0, kCudaR16F = 2, kCudaR16BF = 14;
// cublasComputeType_t: f32 accumulation, operands never narrowed (no TF32).
inline constexpr int kComputeF32 = 68;
inline constexpr int kComputeF32FastTF32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32
// cublasOperation_t.
inline constexpr int32_t kOpN = 0, kOpT = 1;
// cublasLtMatmulDescAttributes_t, cublasLtMatrixLayoutAttribute_t, cublasLtMatmulPreferenceAttributes_t.
inline constexpr int kDescTransA = 3, kDescTransB = 4, kDescEpilogue = 7, kDescBiasPointer = 8;
// cublasLtEpilogue_t: add a bias vector along D's rows (our n) before the store.
inline constexpr int32_t kEpilogueBias = 4;
inline constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
inline constexpr int kPrefMaxWorkspaceBytes = 1;

struct CublasLtApi {
  CublasStatus (*create)(CublasLtHandle* handle) = nullptr;
  const char* (*status_name)(CublasStatus status) = nullptr;
  CublasStatus (*desc_create)(CublasLtMatmulDesc* desc, int compute, int scale_type) = nullptr;
  CublasStatus (*desc_destroy)(CublasLtMatmulDesc desc) = nullptr;
  CublasStatus (*desc_set)(CublasLtMatmulDesc desc, int attr, const void* buf, size_t bytes) = nullptr;
  CublasStatus (*layout_create)(CublasLtLayout* layout, int type, uint64_t rows, uint64_t cols,
                                int64_t ld) = nullptr;
  CublasStatus (*layout_destroy)(CublasLtLayout layout) = nullptr;
  CublasStatus (*layout_set)(CublasLtLayout layout, int attr, const void* buf, size_t bytes) = nullptr;
  CublasStatus (*pref_create)(CublasLtPreference* pref) = nullptr;
  CublasStatus (*pref_destroy)(CublasLtPreference pref) = nullptr;
  CublasStatus (*pref_set)(CublasLtPreference pref, int attr, const void* buf, size_t bytes) = nullptr;
  CublasStatus (*heuristic)(CublasLtHandle handle, CublasLtMatmulDesc desc, CublasLtLayout a,
                            CublasLtLayout b, CublasLtLayout c, CublasLtLayout d,
                            CublasLtPreference pref, int requested, CublasLtHeuristic* results,
                            int* returned) = nullptr;
  CublasStatus (*matmul)(CublasLtHandle handle, CublasLtMatmulDesc desc, const void* alpha,
                         const void* a, CublasLtLayout a_layout, const void* b,
                         CublasLtLayout b_layout, const void* beta, const void* c,
                         CublasLtLayout c_layout, void* d, CublasLtLayout d_layout,
                         const CublasLtAlgo* algo, void* workspace, size_t workspace_bytes,
                         CuStream stream) = nullptr;
};

// The resolved entry points, or nullptr with `why` set. RLX_CUBLASLT names the library file;
// otherwise the sonames of CUDA 13 and 12, then the toolkit's usual folder. Loaded once.
const CublasLtApi* cublaslt_api(std::string* why);

// "CUBLAS_STATUS_NOT_SUPPORTED (15)".
std::string cublas_status_name(const CublasLtApi& lt, CublasStatus status);

}  // namespace rlx::cuda
