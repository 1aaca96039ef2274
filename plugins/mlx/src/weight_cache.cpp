#include "weight_cache.h"

#include "mlx_dtypes.h"

namespace rlx::mlx_target {

std::shared_ptr<const mlx::core::array> WeightCache::get(const Tensor& w) {
  // The entry's array holds the tensor, so while it lives the address names this weight only.
  Key key{w.data(), w.nbytes(), w.dtype()};
  std::lock_guard lock(mutex_);
  if (auto hit = entries_[key].lock()) return hit;
  auto made = std::make_shared<const mlx::core::array>(borrow(w));
  entries_[key] = made;
  return made;
}

}  // namespace rlx::mlx_target
