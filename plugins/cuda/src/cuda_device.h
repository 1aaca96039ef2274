// The cuda target's device: one CUDA device, its primary context and one stream per process,
// behind the shared executor's DeviceApi (sdk/gpu_host/device_api.h). Modules are NVRTC cubins for
// the device's own architecture, cached on disk (cubin_cache.h); kernels launch in blocks of 64
// threads, the size the cooperative kernels are written for.
//
// The device is ordinal 0, or RLX_CUDA_DEVICE=<ordinal>. Every call makes the context current on
// the calling thread, so the executor may be driven from any thread (one at a time).
#pragma once
#include <memory>
#include <string>

#include "cublaslt.h"
#include "cuda_driver.h"
#include "device_api.h"

namespace rlx::cuda {

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int driver_version = 0;  // 12040 for CUDA 12.4
  size_t memory_bytes = 0;
  int max_threads_per_block = 0;
  std::string arch() const;      // "sm_90"
  std::string describe() const;  // "NVIDIA H200 (sm_90, 140 GiB, driver CUDA 12.4)"
};

class CudaDevice final : public gpu_host::DeviceApi {
 public:
  // The process's device, created on first call; nullptr with `why` set when there is none
  // ("libcuda.so.1 not found (...)", "no CUDA device (...)", "driver older than ...").
  static std::shared_ptr<CudaDevice> shared(std::string* why);

  const CudaDeviceInfo& info() const { return info_; }

  std::string target_name() const override { return "cuda"; }
  const gpu_host::KernelLibrary& library() const override;
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
            size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override;
  DeviceLimits limits() const override;
  void zero(const gpu_host::DeviceBuffer& buffer, size_t bytes) override;
  std::unique_ptr<gpu_host::VendorMatmul> prepare_matmul(
      const sdk::MatmulShape& shape, const gpu_host::VendorEpilogue& epilogue) override;
  // Recording is CUDA stream capture into a graph, on unless RLX_CUDA_GRAPHS=0.
  bool can_record() const override;
  void begin_recording() override;
  std::unique_ptr<gpu_host::RecordedWork> end_recording() override;
  void replay(gpu_host::RecordedWork& work) override;

 private:
  CudaDevice(const DriverApi& cu, CuDevice device, CuContext context, CuStream stream,
             CudaDeviceInfo info);
  const DriverApi& cu_;
  CuDevice device_;
  CuContext context_;
  CuStream stream_;
  CudaDeviceInfo info_;
  // cuBLASLt's handle and workspace, made for the first vendor product.
  CublasLtHandle lt_handle_ = nullptr;
  CuDevicePtr lt_workspace_ = 0;

  void check(CuResult rc, const char* call) const;
  void make_current() const;
};

}  // namespace rlx::cuda
