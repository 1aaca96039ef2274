// The Device of a target that computes in host memory (cpu, the skeleton target): buffers are
// 64-byte aligned host allocations, their handle is their address, and every queue is the
// calling thread, so each operation has completed when it returns. The runtime passes such
// buffers to programs as host pointers (host_address), so a host target's executables need no
// device code at all.
#pragma once
#include "rlx/sdk/in_order_device.h"

namespace rlx::sdk {

class HostDevice final : public InOrderDevice {
 public:
  DeviceLimits limits() const override { return {}; }
  DeviceBuffer allocate(size_t bytes) override;
  void release(DeviceBuffer& buffer) noexcept override;
  void* host_address(const DeviceBuffer& buffer) const override { return buffer.handle; }
  void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, QueueId queue) override;
  void download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes, QueueId queue) override;
  void copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset, size_t bytes,
            QueueId queue) override;

 protected:
  void finish() override {}  // every operation completed when it returned
};

}  // namespace rlx::sdk
