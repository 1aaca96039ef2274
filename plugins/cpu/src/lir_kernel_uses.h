// What the cpu plugin's LIR rewrites (gemm_epilogue_fusion.h, attention_layout_fusion.h) need to
// know about a program before merging kernels: who reads and writes each storage buffer, and
// how to drop merged kernels and plan the arena again.
#pragma once
#include <cstdint>
#include <vector>

#include "rlx/core/lir.h"

namespace rlx::cpu {

struct KernelUses {
  std::vector<std::vector<int32_t>>
      readers;                  // per storage buffer: the kernels reading it, in order
  std::vector<int32_t> writer;  // per storage buffer: its one writer, -1 none, -2 several
  std::vector<bool> is_output;  // per storage buffer: a program output
};
KernelUses kernel_uses(const lir::Program& p);

// Row-major strides of a shape.
std::vector<int64_t> row_major(const std::vector<int64_t>& shape);

// Removes the kernels marked in `erase`, recomputes every buffer's lifetime and plans the arena
// again (a merge moves reads and writes to other kernels).
void drop_kernels(lir::Program& p, const std::vector<bool>& erase);

}  // namespace rlx::cpu
