// Host memory a target's device copies to at full speed (CUDA's page-locked memory): the runtime
// allocates the host outputs of a run from it when the target answers Target::extension under
// kHostMemoryExtension, version kHostMemoryVersion. A copy from the device into ordinary
// (pageable) memory goes through the driver's staging buffers at a fraction of the bus's rate:
// for all-MiniLM-L6-v2 at batch 128 on an H200 that copy was 1.6 ms of a 4.4 ms run.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "rlx/core/dtype.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx {

inline constexpr const char* kHostMemoryExtension = "rlx.host_memory";
inline constexpr uint32_t kHostMemoryVersion = 1;

// The layout of version 1, owned by the target. The functions are noexcept (they cross the plugin
// boundary unguarded) and may be called from any thread.
struct HostMemoryV1 {
  // `bytes` (> 0) of host memory aligned to at least 64 bytes, contents unspecified, or nullptr
  // when the device has none left (the caller then takes ordinary memory).
  void* (*allocate)(void* context, uint64_t bytes) = nullptr;
  // Gives back what allocate() returned for the same `bytes`.
  void (*release)(void* context, void* data, uint64_t bytes) = nullptr;
  // Smaller tensors gain nothing from it and stay in ordinary memory.
  uint64_t min_bytes = 0;
  void* context = nullptr;
};

// The target's answer, or nullptr.
inline const HostMemoryV1* host_memory(const Target& target) {
  return static_cast<const HostMemoryV1*>(
      target.extension(kHostMemoryExtension, kHostMemoryVersion));
}

// A host tensor for a run's output: from the target's host memory where it has some and the
// tensor is large enough, else an ordinary zero-filled Tensor. The memory from the target is not
// cleared (the run writes every byte of an output) and keeps `target`, and so its plugin, alive
// until the last copy of the tensor is gone.
Tensor output_tensor(const std::shared_ptr<Target>& target, DType dtype,
                     std::vector<int64_t> shape);

}  // namespace rlx
