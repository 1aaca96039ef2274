// The rocm target's device on AMD GPUs: one HIP device and one stream per process, behind the
// shared executor's DeviceApi (sdk/gpu_host/device_api.h), the mirror of the cuda target's
// CudaDevice (sdk/cuda_host/cuda_device.h) over the HIP runtime. Modules are code objects for
// the device's own architecture (hiprtc, else hipcc), cached on disk as
// <cache>/kernels/rocm/<hash>.hsaco; kernels launch in blocks of 64 threads (one wavefront on
// CDNA), the size the cooperative kernels are written for.
//
// The device is ordinal 0, or RLX_ROCM_DEVICE=<ordinal>. Every call selects it on the calling
// thread, so the executor may be driven from any thread (one at a time).
#pragma once
#include <memory>
#include <string>

#include "device_api.h"
#include "hip_runtime.h"

namespace rlx::rocm {

struct HipDeviceInfo {
  int ordinal = 0;
  std::string name;  // "AMD Instinct MI250X"
  std::string arch;  // "gfx90a" (feature flags dropped)
  int runtime_version = 0;
  size_t memory_bytes = 0;
  int max_threads_per_block = 0;
  int warp_size = 0;
  std::string describe() const;  // "AMD Instinct MI250X (gfx90a, 64 GiB, HIP 5.2)"
};

class HipDevice final : public gpu_host::DeviceApi {
 public:
  // The process's device, created on first call; nullptr with `why` set when there is none
  // ("libamdhip64.so not found (...)", "no AMD GPU (hipGetDeviceCount: hipErrorNoDevice ...)").
  static std::shared_ptr<HipDevice> shared(std::string* why);

  const HipDeviceInfo& info() const { return info_; }

  std::string target_name() const override { return "rocm"; }
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

 private:
  HipDevice(const HipRuntimeApi& hip, HipStream stream, HipDeviceInfo info)
      : hip_(hip), stream_(stream), info_(std::move(info)) {}
  const HipRuntimeApi& hip_;
  HipStream stream_;
  HipDeviceInfo info_;

  void check(HipError rc, const char* call) const;
  void make_current() const;
};

}  // namespace rlx::rocm
