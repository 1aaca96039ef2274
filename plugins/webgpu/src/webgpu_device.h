// The WebGPU side of the webgpu target: one wgpu-native instance, adapter, device and queue per
// process (WebGpuContext), and a DeviceApi adapter over it for the shared GPU host executor
// (sdk/gpu_host/device_api.h). A module is one shader module and compute pipeline per
// kernel section of the generated WGSL (render.h's kShaderKernelMarker), all created when the
// module is built, so a WGSL or pipeline error surfaces at compile time with naga's message.
//
// Dispatches are recorded into one command encoder (one compute pass until a copy needs the
// encoder; WebGPU orders storage writes between dispatches) and submitted when the host needs a
// result (download) or writes memory the recorded commands may read (upload). Downloads copy
// into a mappable staging buffer and map it. WebGPU sizes copies and writes in multiples of 4
// bytes: buffers are allocated rounded up, so the padding is always inside them.
//
// Errors: the device's uncaptured-error callback records every validation, out-of-memory and
// internal error; each call that can raise one checks the record and throws rlx::Error with
// the message, so nothing fails silently. The device is the adapter wgpu-native picks for high
// performance (a GPU, else lavapipe or SwiftShader through Vulkan). It enables wgpu-native's
// shader-int64 and shader-f64 features where the adapter has them (i64/f64 kernels need them).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "device_api.h"

namespace rlx::webgpu {

// RLX_WEBGPU_PORTABLE=1: compile for what every browser runs (no shader-int64/shader-f64, the
// WebGPU default limits), whatever this machine's adapter offers.
bool portable_only();

struct WebGpuInfo {
  std::string name;     // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string backend;  // "Vulkan"
  std::string kind;     // "cpu", "discrete gpu", ...
  std::string library;  // "wgpu-native 29.0.1.1 (/path/libwgpu_native-release.so)"
  bool int64 = false, f64 = false;
  uint32_t max_groups_per_dim = 65535;
  uint64_t max_binding_bytes = 0;
  uint32_t max_storage_buffers = 0;  // per shader stage
  std::string describe() const;      // "llvmpipe (...) (WebGPU on Vulkan, cpu, wgpu-native 29.0.1.1)"
};

class WebGpuContext;

class WebGpuDevice final : public gpu_host::DeviceApi {
 public:
  // The process's device (created on first use); nullptr with `why` set when there is none.
  static std::shared_ptr<WebGpuDevice> shared(std::string* why);
  static const WebGpuInfo* probe(std::string* why);

  explicit WebGpuDevice(std::shared_ptr<WebGpuContext> context);
  ~WebGpuDevice() override;

  const WebGpuInfo& info() const;
  std::string target_name() const override { return "webgpu"; }
  const gpu_host::KernelLibrary& library() const override;
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override;
  DeviceLimits limits() const override;

 private:
  std::shared_ptr<WebGpuContext> context_;
};

}  // namespace rlx::webgpu
