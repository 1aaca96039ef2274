// Where a native Attention reads its operands and writes its result in place of the transposes
// around it (module_plan.cpp's planning): the heads a projection's [B, S, H, D] rows hold, also as
// a column slice of a wider product (q, k and v of one fused projection), and the merged heads
// the product after it reads.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "attention_form.h"
#include "rlx/core/lir.h"

namespace rlx::gpu_host {

// Whether kernel `j` is the transpose that merges attention `a`'s heads ([B, H, Sq, Dv] read as
// [B, Sq, H, Dv]) and the attention's only reader; if so the attention stores into its output
// (AttentionShape::merge_heads) and it is not launched.
bool merges_heads(const AttentionCall& a, const lir::CallKernel& c, const lir::Program& p, size_t j,
                  const std::vector<int>& readers);

// Where an attention operand is read in place instead of through the transpose that splits its
// heads: the storage, and its rows (AttentionShape::*_row and *_offset).
struct SplitHeads {
  int32_t from = -1;
  int64_t row = 0, offset = 0;
};

// Kernel `j` when it is the transpose that splits attention heads ([B, S, H, D] read as
// [B, H, S, D], the rows of [B, S, R] from column `offset` on: R = H * D, or a wider product of
// which this is a column slice) into buffer `t` and nothing but one attention operand reads `t`:
// what it reads, which the attention then reads itself; from -1 otherwise.
SplitHeads splits_heads(const lir::Program& p, size_t j, int32_t t,
                        const std::vector<int>& readers);

// Attention `a` reading the operands in `splits` (0..2 for q, k, v) in place instead of the
// transposes' outputs: their layout in the shape, their storage among the parameters, which are
// numbered again (distinct, in order).
void read_split_heads(AttentionCall& a, const std::vector<std::pair<int, SplitHeads>>& splits);

}  // namespace rlx::gpu_host
