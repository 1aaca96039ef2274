#include "rlx/core/device_tensor.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx {

struct DeviceTensor::Storage {
  std::shared_ptr<Device> device;
  DeviceBuffer buffer;
  ~Storage() { device->release(buffer); }
};

DeviceTensor::DeviceTensor(std::shared_ptr<Device> device, DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  if (!device) throw_internal_error("DeviceTensor needs a device");
  for (int64_t d : shape_)
    if (d < 0) throw_internal_error(fmt::format("DeviceTensor with a negative dim {}", d));
  auto s = std::make_shared<Storage>();
  s->buffer = device->allocate(nbytes());
  s->device = std::move(device);
  storage_ = std::move(s);
}

DeviceTensor DeviceTensor::upload(std::shared_ptr<Device> device, const Tensor& host) {
  DeviceTensor t(std::move(device), host.dtype(), host.shape());
  if (t.nbytes() > 0) t.device()->upload(t.buffer(), 0, host.data(), t.nbytes(), 0);
  return t;
}

int64_t DeviceTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

size_t DeviceTensor::nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

const DeviceBuffer& DeviceTensor::buffer() const {
  if (!storage_) throw_internal_error("buffer() of an undefined DeviceTensor");
  return storage_->buffer;
}

Device* DeviceTensor::device() const { return storage_ ? storage_->device.get() : nullptr; }

Tensor DeviceTensor::download() const {
  Tensor host(dtype_, shape_);
  download_into(host);
  return host;
}

void DeviceTensor::download_into(Tensor& host) const {
  if (host.dtype() != dtype_ || host.shape() != shape_)
    throw_internal_error("download_into a tensor of another dtype or shape");
  if (nbytes() == 0) return;
  Device& d = *storage_->device;
  d.download(storage_->buffer, 0, host.data(), nbytes(), 0);
  d.synchronize(d.record(0));
}

}  // namespace rlx
