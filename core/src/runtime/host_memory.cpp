// output_tensor(): a run's host output in the memory its target's device copies to fastest.
#include "rlx/core/host_memory.h"

#include <utility>

namespace rlx {

Tensor output_tensor(const std::shared_ptr<Target>& target, DType dtype,
                     std::vector<int64_t> shape) {
  const HostMemoryV1* memory = target ? host_memory(*target) : nullptr;
  uint64_t bytes = dtype_size(dtype);
  for (int64_t d : shape) {
    // Bad or overflowing shapes are the ordinary constructor's to report.
    if (d < 0 || (d > 0 && bytes > UINT64_MAX / static_cast<uint64_t>(d)))
      return Tensor(dtype, std::move(shape));
    bytes *= static_cast<uint64_t>(d);
  }
  if (!memory || !memory->allocate || !memory->release || bytes == 0 || bytes < memory->min_bytes)
    return Tensor(dtype, std::move(shape));
  void* data = memory->allocate(memory->context, bytes);
  if (!data) return Tensor(dtype, std::move(shape));
  // The deleter holds the target: the table and the functions it points at live in the plugin.
  std::shared_ptr<void> owner(data, [target, memory, bytes](void* p) {
    memory->release(memory->context, p, bytes);
  });
  return Tensor::view(dtype, std::move(shape), data, std::move(owner));
}

}  // namespace rlx
