#include "api_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::gpu_host {

DeviceBuffer ApiDevice::allocate(size_t bytes) {
  // Device APIs refuse empty buffers, and a kernel parameter must name something.
  DeviceBuffer b = api_->allocate(std::max<size_t>(bytes, 16));
  b.bytes = bytes;
  return b;
}

void ApiDevice::check_range(const DeviceBuffer& b, size_t offset, size_t bytes, const char* what) const {
  if (!b.valid() || offset > b.bytes || bytes > b.bytes - offset)
    throw_user_error(fmt::format("{}: {} of {} bytes at offset {} does not fit a device buffer of {} bytes",
                                 api_->target_name(), what, bytes, offset, b.bytes));
}

void ApiDevice::upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, QueueId) {
  check_range(dst, offset, bytes, "upload");
  if (bytes == 0) return;
  if (offset == 0) return api_->upload(dst, src, bytes);
  std::vector<char> whole(dst.bytes);
  api_->download(dst, whole.data(), dst.bytes);
  std::memcpy(whole.data() + offset, src, bytes);
  api_->upload(dst, whole.data(), dst.bytes);
}

void ApiDevice::download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes, QueueId) {
  check_range(src, offset, bytes, "download");
  if (bytes == 0) return;
  if (offset == 0) return api_->download(src, dst, bytes);
  std::vector<char> whole(src.bytes);
  api_->download(src, whole.data(), src.bytes);
  std::memcpy(dst, whole.data() + offset, bytes);
}

void ApiDevice::copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset,
                     size_t bytes, QueueId queue) {
  check_range(src, src_offset, bytes, "copy source");
  check_range(dst, dst_offset, bytes, "copy destination");
  if (bytes == 0) return;
  if (src_offset == 0 && dst_offset == 0) return api_->copy(src, dst, bytes);
  std::vector<char> part(bytes);
  download(src, src_offset, part.data(), bytes, queue);
  upload(dst, dst_offset, part.data(), bytes, queue);
}

}  // namespace rlx::gpu_host
