// The Vulkan side of the vulkan (and directx-on-Vulkan) targets: one instance, device and
// compute queue per process (VulkanContext), and a DeviceApi adapter over it for the shared GPU
// host executor (sdk/gpu_host/device_api.h). A module is a set of compute shaders,
// one per kernel section of the generated source (render.h's kShaderKernelMarker), each
// compiled to SPIR-V by glslang; pipelines are created on first launch.
//
// Commands are recorded into one command buffer with a full memory barrier after each dispatch
// or copy, and submitted when the host needs a result (download) or writes memory the recorded
// commands may read (upload). Buffers live in host-visible coherent memory (device-local too
// where the device has such a type), mapped once: uploads and downloads are memcpy.
//
// The device is the first discrete GPU, else integrated, virtual, then CPU device (lavapipe);
// RLX_VULKAN_DEVICE picks another by a substring of its name ("llvmpipe", "NVIDIA").
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "device_api.h"
#include "spirv_compiler.h"
#include "vulkan_loader.h"

namespace rlx::vulkan {

struct VulkanDeviceInfo {
  std::string name;        // "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string api;         // "1.3.230"
  std::string kind;        // "cpu", "discrete gpu", ...
  bool fp64 = false, int64 = false, int16 = false, int8 = false;
  bool storage16 = false, storage8 = false;
  uint32_t max_groups[3] = {1, 1, 1};
  uint64_t max_storage_range = 0;
  uint32_t max_storage_buffers = 0;  // per stage
  std::string describe() const;      // "llvmpipe (...) (Vulkan 1.3.230, cpu)"
};

class VulkanContext;

// A DeviceApi speaking one shader language with one kernel library on the process's device.
class VulkanDevice final : public gpu_host::DeviceApi {
 public:
  // nullptr with `why` set when there is no usable Vulkan device.
  static std::shared_ptr<VulkanDevice> create(const std::string& target_name,
                                              const gpu_host::KernelLibrary& library,
                                              ShaderLanguage language, std::string* why);
  // The process's device, without creating an adapter; nullptr with `why` set when absent.
  static const VulkanDeviceInfo* probe(std::string* why);

  VulkanDevice(std::shared_ptr<VulkanContext> context, std::string target_name,
               const gpu_host::KernelLibrary& library, ShaderLanguage language);
  ~VulkanDevice() override;

  const VulkanDeviceInfo& info() const;
  std::string target_name() const override { return name_; }
  const gpu_host::KernelLibrary& library() const override { return library_; }
  gpu_host::DeviceBuffer allocate(size_t bytes) override;
  void release(gpu_host::DeviceBuffer& buffer) noexcept override;
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override;
  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override;
  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) override;
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override;
  void launch(gpu_host::Module& module, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override;
  void finish() override;
  std::optional<gpu_host::DeviceMemoryUse> memory_use() const override;
  DeviceLimits limits() const override {
    DeviceLimits l;
    l.max_buffer_bytes = info().max_storage_range;
    l.max_buffers_per_kernel = info().max_storage_buffers;
    return l;
  }

 private:
  std::shared_ptr<VulkanContext> context_;
  std::string name_;
  const gpu_host::KernelLibrary& library_;
  ShaderLanguage language_;
  // Where downloads from memory the CPU reads uncached are copied first (grown as needed).
  gpu_host::DeviceBuffer readback_;
  gpu_host::DeviceMemoryUse use_;  // what create() allocated, under the context's mutex

  // A mapped buffer of `bytes`: where kernels' buffers go, or (readback) memory the CPU reads fast.
  gpu_host::DeviceBuffer create(size_t bytes, bool readback);
};

}  // namespace rlx::vulkan
