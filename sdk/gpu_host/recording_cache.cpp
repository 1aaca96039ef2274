#include "recording_cache.h"

#include <algorithm>

namespace rlx::gpu_host {

RecordedWork* RecordingCache::find(const Key& key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const auto& entry) { return entry.first == key; });
  if (it == entries_.end()) return nullptr;
  std::rotate(entries_.begin(), it, it + 1);
  return entries_.front().second.get();
}

RecordedWork& RecordingCache::add(Key key, std::unique_ptr<RecordedWork> work) {
  if (entries_.size() >= kKept) entries_.pop_back();
  entries_.emplace(entries_.begin(), std::move(key), std::move(work));
  return *entries_.front().second;
}

}  // namespace rlx::gpu_host
