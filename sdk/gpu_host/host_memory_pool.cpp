#include "host_memory_pool.h"

#include <utility>
#include <vector>

namespace rlx::gpu_host {
namespace {

size_t rounded(size_t bytes) {
  return (bytes + HostMemoryPool::kGranule - 1) / HostMemoryPool::kGranule * HostMemoryPool::kGranule;
}

}  // namespace

HostMemoryPool::HostMemoryPool(std::function<void*(size_t)> allocate,
                               std::function<void(void*)> release, size_t keep_bytes)
    : allocate_(std::move(allocate)), release_(std::move(release)), keep_bytes_(keep_bytes) {}

HostMemoryPool::~HostMemoryPool() {
  for (auto& [size, data] : kept_) release_(data);
}

void* HostMemoryPool::take(size_t bytes) noexcept {
  const size_t size = rounded(bytes);
  {
    std::lock_guard lock(mutex_);
    if (auto it = kept_.find(size); it != kept_.end()) {
      void* data = it->second;
      kept_.erase(it);
      kept_total_ -= size;
      return data;
    }
  }
  // Outside the lock: locking pages takes long and other threads may give blocks back meanwhile.
  try {
    return allocate_(size);
  } catch (...) {
    return nullptr;
  }
}

void HostMemoryPool::give_back(void* data, size_t bytes) noexcept {
  const size_t size = rounded(bytes);
  {
    std::lock_guard lock(mutex_);
    if (kept_total_ + size <= keep_bytes_) {
      try {
        kept_.emplace(size, data);
        kept_total_ += size;
        return;
      } catch (...) {
      }
    }
  }
  release_(data);
}

size_t HostMemoryPool::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_total_;
}

}  // namespace rlx::gpu_host
