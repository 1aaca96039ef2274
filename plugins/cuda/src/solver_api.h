// The cuSOLVER (dense) and cuBLAS entry points the cuda target's linear algebra calls use
// (dense_linalg_call.h), resolved with dlopen on first use like cuBLASLt's (sdk/cuda_host/
// cublaslt.h): the plugin builds without the toolkit, and a machine without the libraries
// refuses these calls by name when a program is compiled. The declarations are the libraries'
// C ABI written out: handles are opaque pointers, enums plain integers with the values of
// cusolverDn.h and cublas_api.h. Each routine has an f32 and an f64 entry (the S and D forms).
#pragma once
#include <string>
#include <type_traits>

#include "cuda_driver.h"

namespace rlx::cuda {

using SolverStatus = int;  // cusolverStatus_t and cublasStatus_t: 0 is success
using SolverHandle = struct SolverHandleOpaque*;
using BlasHandle = struct BlasHandleOpaque*;

// cublasFillMode_t, cublasOperation_t, cublasSideMode_t, cublasDiagType_t, cusolverEigMode_t.
inline constexpr int kFillLower = 0, kFillUpper = 1;
inline constexpr int kNoTranspose = 0, kTranspose = 1;
inline constexpr int kSideRight = 1;
inline constexpr int kDiagNonUnit = 0, kDiagUnit = 1;
inline constexpr int kEigVectors = 1;

// The S or D routines of one element type T.
template <typename T>
struct SolverRoutines {
  SolverStatus (*potrf_size)(SolverHandle, int uplo, int n, T* a, int lda, int* lwork) = nullptr;
  SolverStatus (*potrf)(SolverHandle, int uplo, int n, T* a, int lda, T* work, int lwork,
                        int* info) = nullptr;
  SolverStatus (*getrf_size)(SolverHandle, int m, int n, T* a, int lda, int* lwork) = nullptr;
  SolverStatus (*getrf)(SolverHandle, int m, int n, T* a, int lda, T* work, int* ipiv,
                        int* info) = nullptr;
  SolverStatus (*getrs)(SolverHandle, int trans, int n, int nrhs, const T* a, int lda,
                        const int* ipiv, T* b, int ldb, int* info) = nullptr;
  SolverStatus (*geqrf_size)(SolverHandle, int m, int n, T* a, int lda, int* lwork) = nullptr;
  SolverStatus (*geqrf)(SolverHandle, int m, int n, T* a, int lda, T* tau, T* work, int lwork,
                        int* info) = nullptr;
  SolverStatus (*orgqr_size)(SolverHandle, int m, int n, int k, const T* a, int lda, const T* tau,
                             int* lwork) = nullptr;
  SolverStatus (*orgqr)(SolverHandle, int m, int n, int k, T* a, int lda, const T* tau, T* work,
                        int lwork, int* info) = nullptr;
  SolverStatus (*gesvd_size)(SolverHandle, int m, int n, int* lwork) = nullptr;
  SolverStatus (*gesvd)(SolverHandle, signed char jobu, signed char jobvt, int m, int n, T* a,
                        int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork, T* rwork,
                        int* info) = nullptr;
  SolverStatus (*syevd_size)(SolverHandle, int jobz, int uplo, int n, const T* a, int lda,
                             const T* w, int* lwork) = nullptr;
  SolverStatus (*syevd)(SolverHandle, int jobz, int uplo, int n, T* a, int lda, T* w, T* work,
                        int lwork, int* info) = nullptr;
  SolverStatus (*trsm)(BlasHandle, int side, int uplo, int trans, int diag, int m, int n,
                       const T* alpha, const T* a, int lda, T* b, int ldb) = nullptr;
};

struct SolverApi {
  SolverStatus (*create)(SolverHandle*) = nullptr;
  SolverStatus (*set_stream)(SolverHandle, CuStream) = nullptr;
  SolverStatus (*blas_create)(BlasHandle*) = nullptr;
  SolverStatus (*blas_set_stream)(BlasHandle, CuStream) = nullptr;
  SolverRoutines<float> f32;
  SolverRoutines<double> f64;

  template <typename T>
  const SolverRoutines<T>& routines() const {
    if constexpr (std::is_same_v<T, float>)
      return f32;
    else
      return f64;
  }
};

// The resolved entry points, or nullptr with `why` set. RLX_CUSOLVER and RLX_CUBLAS name the
// library files; otherwise the sonames of CUDA 13 and 12, then the toolkit's usual folder.
// Loaded once.
const SolverApi* solver_api(std::string* why);

// The process's cuSOLVER and cuBLAS handles on `stream` (made once; never destroyed, like the
// driver's context). Throws rlx::Error (kDevice) when a library cannot make one.
SolverHandle solver_handle(const SolverApi& api, CuStream stream);
BlasHandle blas_handle(const SolverApi& api, CuStream stream);

}  // namespace rlx::cuda
