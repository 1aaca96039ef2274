// Page-locked host memory kept for reuse. Locking pages is slow (cuMemHostAlloc of 25 MB takes
// milliseconds, longer than the copy it speeds up), so blocks a run's outputs gave back are kept
// and handed to the next output of the same size: a serving loop, or Python calls that make new
// arrays each time, lock their memory once.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>

namespace rlx::gpu_host {

class HostMemoryPool {
 public:
  // `allocate` returns nullptr (or throws) when it has no memory; `release` frees what it gave.
  // At most `keep_bytes` of given-back blocks are kept.
  HostMemoryPool(std::function<void*(size_t)> allocate, std::function<void(void*)> release,
                 size_t keep_bytes = kDefaultKeepBytes);
  ~HostMemoryPool();
  HostMemoryPool(const HostMemoryPool&) = delete;
  HostMemoryPool& operator=(const HostMemoryPool&) = delete;

  // A kept block of `bytes` (rounded up to kGranule), else a new one; nullptr when none is left.
  void* take(size_t bytes) noexcept;
  // `data` came from take(bytes).
  void give_back(void* data, size_t bytes) noexcept;
  size_t kept_bytes() const;

  static constexpr size_t kGranule = size_t{64} << 10;
  static constexpr size_t kDefaultKeepBytes = size_t{512} << 20;

 private:
  std::function<void*(size_t)> allocate_;
  std::function<void(void*)> release_;
  size_t keep_bytes_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> kept_;  // by rounded size
  size_t kept_total_ = 0;
};

}  // namespace rlx::gpu_host
