#include "cuda_matmul.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

// op(X) is rows x cols with element (i, j) at i * si + j * sj: either X itself in column-major
// order (si == 1, op N) or its transpose (sj == 1, op T), with the leading dimension cuBLASLt
// needs. Size-1 dims take any stride.
struct Operand {
  int32_t op = kOpN;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};

std::optional<Operand> operand(int64_t r, int64_t si, int64_t c, int64_t sj) {
  if (si == 1 || r == 1) {
    const int64_t ld = c == 1 ? r : sj;
    if (ld >= r) return Operand{kOpN, static_cast<uint64_t>(r), static_cast<uint64_t>(c), ld};
  }
  if (sj == 1 || c == 1) {
    const int64_t ld = r == 1 ? c : si;
    if (ld >= c) return Operand{kOpT, static_cast<uint64_t>(c), static_cast<uint64_t>(r), ld};
  }
  return std::nullopt;
}

// The first cuBLASLt operand is B^T (n x k), the second A^T (k x m).
std::optional<Operand> b_side(const sdk::MatmulShape& s) {
  return operand(s.n, s.b_n, s.k, s.b_k);
}
std::optional<Operand> a_side(const sdk::MatmulShape& s) {
  return operand(s.k, s.a_k, s.m, s.a_m);
}

std::optional<int> data_type(DType t) {
  switch (t) {
    case DType::kF32: return kCudaR32F;
    case DType::kF16: return kCudaR16F;
    case DType::kBF16: return kCudaR16BF;
    default: return std::nullopt;
  }
}

class CublasLtMatmul final : public gpu_host::VendorMatmul {
 public:
  CublasLtMatmul(const CublasLtApi& lt, CublasLtHandle handle, CuStream stream,
                 CuDevicePtr workspace, size_t workspace_bytes, const sdk::MatmulShape& s,
                 const gpu_host::VendorEpilogue& epilogue, const MatmulTuner* tuner)
      : lt_(lt), handle_(handle), stream_(stream), workspace_(workspace), name_(s.name),
        epilogue_(epilogue) {
    const Operand first = *b_side(s), second = *a_side(s);
    const int compute_io = *data_type(s.a_dtype), out = *data_type(s.c_dtype);
    const int compute = s.tf32 && s.a_dtype == DType::kF32 ? kComputeF32FastTF32 : kComputeF32;
    check(lt_.desc_create(&desc_, compute, kCudaR32F), "cublasLtMatmulDescCreate");
    check(lt_.desc_set(desc_, kDescTransA, &first.op, sizeof first.op), "set TRANSA");
    check(lt_.desc_set(desc_, kDescTransB, &second.op, sizeof second.op), "set TRANSB");
    if (epilogue_.bias)
      check(lt_.desc_set(desc_, kDescEpilogue, &kEpilogueBias, sizeof kEpilogueBias),
            "set EPILOGUE");
    first_ = layout(compute_io, first.rows, first.cols, first.ld, s.batch, s.b_batch);
    second_ = layout(compute_io, second.rows, second.cols, second.ld, s.batch, s.a_batch);
    out_ = layout(out, static_cast<uint64_t>(s.n), static_cast<uint64_t>(s.m), s.n, s.batch,
                  s.m * s.n);
    CublasLtPreference pref = nullptr;
    check(lt_.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    check(lt_.pref_set(pref, kPrefMaxWorkspaceBytes, &workspace_bytes, sizeof workspace_bytes),
          "set MAX_WORKSPACE_BYTES");
    constexpr int kCandidates = 8;
    CublasLtHeuristic found[kCandidates] = {};
    int returned = 0;
    const CublasStatus rc = lt_.heuristic(handle_, desc_, first_, second_, out_, out_, pref,
                                          tuner ? kCandidates : 1, found, &returned);
    lt_.pref_destroy(pref);
    if (rc != kCublasSuccess || returned == 0)
      throw Error(ErrorKind::kCompile,
                  fmt::format("cuda: cuBLASLt has no algorithm for {} (C[{}, {}, {}], k = {}): {}. "
                              "RLX_CUDA_GEMM=kernel computes every product with rlx's own kernel",
                              name_, s.batch, s.m, s.n, s.k,
                              rc != kCublasSuccess ? cublas_status_name(lt_, rc) : "none found"));
    int chosen = 0;
    if (tuner && returned > 1) {
      const size_t in = static_cast<size_t>(dtype_size(s.a_dtype));
      const size_t out_size = static_cast<size_t>(dtype_size(s.c_dtype));
      MatmulBytes bytes;
      bytes.a = in * extent(s.batch, s.a_batch, s.m, s.a_m, s.k, s.a_k);
      bytes.b = in * extent(s.batch, s.b_batch, s.k, s.b_k, s.n, s.b_n);
      bytes.c = out_size * static_cast<size_t>(s.batch * s.m * s.n);
      if (epilogue_.bias) bytes.bias = out_size * static_cast<size_t>(s.n);
      if (epilogue_.residual) bytes.residual = bytes.c;
      chosen = (*tuner)(returned, bytes, [&](int i, const MatmulOperands& o) {
        algo_ = found[i].algo;
        workspace_bytes_ = found[i].workspace_bytes;
        gpu_host::DeviceBuffer a{reinterpret_cast<void*>(o.a), bytes.a},
            b{reinterpret_cast<void*>(o.b), bytes.b}, c{reinterpret_cast<void*>(o.c), bytes.c},
            bias{reinterpret_cast<void*>(o.bias), bytes.bias},
            residual{reinterpret_cast<void*>(o.residual), bytes.residual};
        run(a, b, c, {epilogue_.bias ? &bias : nullptr, epilogue_.residual ? &residual : nullptr});
      });
    }
    algo_ = found[chosen].algo;
    workspace_bytes_ = found[chosen].workspace_bytes;
  }

  ~CublasLtMatmul() override {
    for (CublasLtLayout l : {first_, second_, out_})
      if (l) lt_.layout_destroy(l);
    if (desc_) lt_.desc_destroy(desc_);
  }

  void run(const gpu_host::DeviceBuffer& a, const gpu_host::DeviceBuffer& b,
           const gpu_host::DeviceBuffer& c, const gpu_host::VendorOperands& add) override {
    if (epilogue_.bias != (add.bias != nullptr) || epilogue_.residual != (add.residual != nullptr))
      throw_internal_error(fmt::format("cuda: {} was planned with other additions", name_));
    const float one = 1.0f, zero = 0.0f;
    void* d = c.handle;
    if (add.bias)
      check(lt_.desc_set(desc_, kDescBiasPointer, &add.bias->handle, sizeof add.bias->handle),
            "set BIAS_POINTER");
    // A residual is cuBLASLt's C: D = A x B + 1 * C (+ bias).
    const void* sum = add.residual ? add.residual->handle : d;
    check(lt_.matmul(handle_, desc_, &one, b.handle, first_, a.handle, second_,
                     add.residual ? &one : &zero, sum, out_, d, out_, &algo_,
                     reinterpret_cast<void*>(workspace_), workspace_bytes_, stream_),
          "cublasLtMatmul");
  }

 private:
  const CublasLtApi& lt_;
  CublasLtHandle handle_;
  CuStream stream_;
  CuDevicePtr workspace_;
  size_t workspace_bytes_ = 0;
  std::string name_;
  gpu_host::VendorEpilogue epilogue_;
  CublasLtMatmulDesc desc_ = nullptr;
  CublasLtLayout first_ = nullptr, second_ = nullptr, out_ = nullptr;
  CublasLtAlgo algo_{};

  // Elements an operand spans: its last element's offset plus one.
  static size_t extent(int64_t batch, int64_t sb, int64_t r, int64_t sr, int64_t c, int64_t sc) {
    return static_cast<size_t>((batch - 1) * sb + (r - 1) * sr + (c - 1) * sc + 1);
  }

  void check(CublasStatus rc, const char* call) const {
    if (rc != kCublasSuccess)
      throw Error(ErrorKind::kDevice,
                  fmt::format("cuda: {} failed for {}: {}", call, name_, cublas_status_name(lt_, rc)));
  }

  CublasLtLayout layout(int type, uint64_t rows, uint64_t cols, int64_t ld, int64_t batch,
                        int64_t batch_stride) {
    CublasLtLayout l = nullptr;
    check(lt_.layout_create(&l, type, rows, cols, ld), "cublasLtMatrixLayoutCreate");
    if (batch > 1) {
      const int32_t count = static_cast<int32_t>(batch);
      check(lt_.layout_set(l, kLayoutBatchCount, &count, sizeof count), "set BATCH_COUNT");
      check(lt_.layout_set(l, kLayoutStridedBatchOffset, &batch_stride, sizeof batch_stride),
            "set STRIDED_BATCH_OFFSET");
    }
    return l;
  }
};

}  // namespace

std::string cublaslt_takes(const sdk::MatmulShape& s) {
  if (const char* mode = std::getenv("RLX_CUDA_GEMM"); mode && std::string_view(mode) == "kernel")
    return "";
  if (!cublaslt_api(nullptr)) return "";
  if (s.a_dtype != s.b_dtype || !data_type(s.a_dtype) || !data_type(s.c_dtype)) return "";
  if (s.c_dtype != s.a_dtype && s.c_dtype != DType::kF32) return "";
  if (s.batch > (int64_t{1} << 31) - 1) return "";
  if (!a_side(s) || !b_side(s)) return "";
  return s.tf32 && s.a_dtype == DType::kF32 ? "cuBLASLt (TF32)" : "cuBLASLt";
}

bool cublaslt_tunes(const sdk::MatmulShape& s) {
  if (const char* tune = std::getenv("RLX_CUDA_GEMM_TUNE"))
    return std::string_view(tune) == "1";
  return s.batch * s.m * s.n * s.k <= kTunedAlways;
}

std::unique_ptr<gpu_host::VendorMatmul> plan_cublaslt(const CublasLtApi& lt, CublasLtHandle handle,
                                                      CuStream stream, CuDevicePtr workspace,
                                                      size_t workspace_bytes,
                                                      const sdk::MatmulShape& shape,
                                                      const gpu_host::VendorEpilogue& epilogue,
                                                      const MatmulTuner* tuner) {
  return std::make_unique<CublasLtMatmul>(lt, handle, stream, workspace, workspace_bytes, shape,
                                          epilogue, tuner);
}

}  // namespace rlx::cuda
