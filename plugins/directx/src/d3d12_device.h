// The directx target's DeviceApi adapter on Direct3D 12 (gpu_host/device_api.h), over the
// process's D3D12Context. Windows only.
//
// Buffers are UAV buffers in default heaps; uploads go through an upload-heap buffer and a
// recorded copy (no wait), downloads through a readback-heap buffer after the recorded work ran.
// A module is one compute shader per kernel section (render.h's kShaderKernelMarker), compiled
// to DXIL by dxcompiler.dll when built; its pipeline state is made on first launch, with a root
// signature of one UAV root descriptor per buffer (u0, u1, ... as the HLSL declares them).
#pragma once
#include <memory>
#include <string>

#include "d3d12_info.h"
#include "device_api.h"

namespace rlx::directx {

class D3D12Context;

class D3D12Device final : public gpu_host::DeviceApi {
 public:
  // The process's device, without making an adapter; nullptr with `why` set when there is no
  // usable one (no D3D12 device, shader model below 6.2, no dxcompiler.dll).
  static const D3D12Info* probe(std::string* why);
  // nullptr with `why` set when probe() finds nothing.
  static std::shared_ptr<D3D12Device> create(const std::string& target_name, const gpu_host::KernelLibrary& library,
                                             std::string* why);

  D3D12Device(D3D12Context& context, std::string target_name, const gpu_host::KernelLibrary& library)
      : context_(context), name_(std::move(target_name)), library_(library) {}

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

 private:
  D3D12Context& context_;
  std::string name_;
  const gpu_host::KernelLibrary& library_;
};

}  // namespace rlx::directx
