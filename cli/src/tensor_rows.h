// Rows of tensors whose first dim is a batch: cut for data-parallel ranks, micro-batches and
// calibration batches, and joined back.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx::cli {

// Rows [at, at + count) of `t`. With `target`, in the host memory its device copies from at full
// speed where it has some (rlx/core/host_memory.h): the batches a training loop feeds every step.
Tensor rows(const Tensor& t, int64_t at, int64_t count,
            const std::shared_ptr<Target>& target = nullptr);

// `parts` (one dtype, equal trailing dims) one after another along the first dim.
Tensor join_rows(const std::vector<Tensor>& parts);

}  // namespace rlx::cli
