// Weights as MLX arrays, made once and shared by every executable of the target that uses them
// (each binding of a model's symbolic dims is its own executable, and they all take the same
// weights). The arrays borrow the tensors' storage (mlx_dtypes.h, borrow): no copy is made.
#pragma once
#include <mlx/array.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "rlx/core/tensor.h"

namespace rlx::mlx_target {

class WeightCache {
 public:
  // The array of `w`, made on the first request while an earlier one is alive.
  std::shared_ptr<const mlx::core::array> get(const Tensor& w);

 private:
  using Key = std::tuple<const void*, size_t, DType>;
  std::mutex mutex_;
  std::map<Key, std::weak_ptr<const mlx::core::array>> entries_;
};

}  // namespace rlx::mlx_target
