// A GPU-style target's memory as the contract's Device (rlx/core/device.h), over the same
// DeviceApi its executables run on, so a caller's device tensors bind straight to kernels.
//
// What this host does not have yet, and how it still keeps the contract: the adapters expose one
// in-order queue (sdk::InOrderDevice), and a transfer at a non-zero offset goes through host
// memory (whole-buffer download, patch, upload). Whole-buffer transfers, the ones the runtime
// makes, are direct.
#pragma once
#include <memory>

#include "device_api.h"
#include "rlx/sdk/in_order_device.h"

namespace rlx::gpu_host {

class ApiDevice final : public sdk::InOrderDevice {
 public:
  explicit ApiDevice(std::shared_ptr<DeviceApi> api) : api_(std::move(api)) {}

  DeviceLimits limits() const override { return api_->limits(); }
  DeviceBuffer allocate(size_t bytes) override;
  void release(DeviceBuffer& buffer) noexcept override { api_->release(buffer); }
  void* host_address(const DeviceBuffer&) const override { return nullptr; }
  void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, QueueId queue) override;
  void download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes, QueueId queue) override;
  void copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset, size_t bytes,
            QueueId queue) override;

 protected:
  void finish() override { api_->finish(); }

 private:
  std::shared_ptr<DeviceApi> api_;

  void check_range(const DeviceBuffer& b, size_t offset, size_t bytes, const char* what) const;
};

}  // namespace rlx::gpu_host
