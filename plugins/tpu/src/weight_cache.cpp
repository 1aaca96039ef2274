#include "weight_cache.h"

namespace rlx::tpu {

std::shared_ptr<const DeviceWeight> WeightCache::get(const std::shared_ptr<PjrtClient>& client,
                                                     const Tensor& w) {
  std::lock_guard lock(mutex_);
  // Entries whose executables are all gone are dropped as we pass.
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->second.expired() ? entries_.erase(it) : std::next(it);
  Key key{client.get(), w.data(), w.nbytes(), w.dtype()};
  if (auto it = entries_.find(key); it != entries_.end())
    if (auto alive = it->second.lock()) return alive;
  auto entry = std::make_shared<DeviceWeight>(
      DeviceWeight{w, client->upload(w.data(), w.dtype(), w.shape())});
  entries_[key] = entry;
  return entry;
}

}  // namespace rlx::tpu
