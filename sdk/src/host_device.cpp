#include "rlx/sdk/host_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "rlx/core/error.h"

namespace rlx::sdk {
namespace {

void check_range(const DeviceBuffer& b, size_t offset, size_t bytes, const char* what) {
  if (!b.valid() || offset > b.bytes || bytes > b.bytes - offset)
    throw_user_error(fmt::format("host device: {} of {} bytes at offset {} does not fit a buffer of {} bytes", what,
                                 bytes, offset, b.bytes));
}

}  // namespace

DeviceBuffer HostDevice::allocate(size_t bytes) {
  constexpr size_t kAlign = 64;  // a cache line, and what the cpu kernels' vector loads prefer
  size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  return DeviceBuffer{p, bytes};
}

void HostDevice::release(DeviceBuffer& buffer) noexcept {
  std::free(buffer.handle);
  buffer = {};
}

void HostDevice::upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, QueueId) {
  check_range(dst, offset, bytes, "upload");
  if (bytes) std::memcpy(static_cast<char*>(dst.handle) + offset, src, bytes);
}

void HostDevice::download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes, QueueId) {
  check_range(src, offset, bytes, "download");
  if (bytes) std::memcpy(dst, static_cast<const char*>(src.handle) + offset, bytes);
}

void HostDevice::copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset,
                      size_t bytes, QueueId) {
  check_range(src, src_offset, bytes, "copy source");
  check_range(dst, dst_offset, bytes, "copy destination");
  if (bytes) std::memmove(static_cast<char*>(dst.handle) + dst_offset, static_cast<const char*>(src.handle) + src_offset, bytes);
}

}  // namespace rlx::sdk
