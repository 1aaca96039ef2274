// A tensor in a target's memory (contract 2.0): what a caller keeps on the device between runs
// (a decoder's KV cache, weights it binds itself). Copies share the buffer; the last copy
// releases it through the Device it came from, which it keeps alive.
#pragma once
#include <memory>
#include <vector>

#include "rlx/core/device.h"
#include "rlx/core/tensor.h"

namespace rlx {

class DeviceTensor {
 public:
  DeviceTensor() = default;
  // Allocates (uninitialised) memory for dtype[shape] on `device`.
  DeviceTensor(std::shared_ptr<Device> device, DType dtype, std::vector<int64_t> shape);
  // A device copy of `host`.
  static DeviceTensor upload(std::shared_ptr<Device> device, const Tensor& host);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const;
  size_t nbytes() const;
  const DeviceBuffer& buffer() const;
  Device* device() const;

  // The values on the host (waits for the device's queue 0).
  Tensor download() const;
  // Into `host`, which must have this tensor's dtype and shape.
  void download_into(Tensor& host) const;

 private:
  struct Storage;
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
};

}  // namespace rlx
