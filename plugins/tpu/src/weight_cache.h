// Weights on the device, uploaded once and shared by every executable of the target that uses
// them: each binding of a model's symbolic dims is its own executable (a decoder compiles many),
// and they all take the same weight tensors.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "pjrt_client.h"
#include "rlx/core/tensor.h"

namespace rlx::tpu {

// A weight's device buffer with the host tensor it came from: holding the tensor keeps its
// storage alive, so while the entry lives its address names this weight and no other.
struct DeviceWeight {
  Tensor host;
  PjrtBuffer device;
};

class WeightCache {
 public:
  // The device copy of `w`, uploaded on the first request while an earlier one is alive.
  std::shared_ptr<const DeviceWeight> get(const std::shared_ptr<PjrtClient>& client,
                                          const Tensor& w);

 private:
  using Key = std::tuple<const PjrtClient*, const void*, size_t, DType>;
  std::mutex mutex_;
  std::map<Key, std::weak_ptr<const DeviceWeight>> entries_;
};

}  // namespace rlx::tpu
