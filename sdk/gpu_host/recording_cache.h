// The recordings (CUDA graphs) of one executable, by the device buffers they were recorded on.
// A caller that alternates between sets of buffers, as a training step does with its parameters
// (each step writes the next values where the values two steps old were) and a decode loop
// whose caches come back in fresh memory, would otherwise record and instantiate a graph on
// every run, which costs more than a small step's kernels. A few recordings are kept, the least
// recently used one dropped for a new one.
#pragma once
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "device_api.h"

namespace rlx::gpu_host {

class RecordingCache {
 public:
  // The buffer handles of a run, in the program's buffer order (nullptr where none is bound).
  using Key = std::vector<const void*>;
  static constexpr size_t kKept = 4;

  // The recording made for `key`, now the most recently used; nullptr when there is none.
  RecordedWork* find(const Key& key);
  // Keeps `work` as the recording for `key` (not yet kept), dropping the least recently used
  // one when kKept are kept already; returns it.
  RecordedWork& add(Key key, std::unique_ptr<RecordedWork> work);
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<Key, std::unique_ptr<RecordedWork>>> entries_;  // most recent first
};

}  // namespace rlx::gpu_host
