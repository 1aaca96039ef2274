// A reduction with few outputs and a long reduced extent (a loss summed over a whole image, a
// norm over every element) split in two kernels: partial results over C chunks of one reduced
// dim, then the reduction of the C partials. Every target runs a loop kernel's outputs in
// parallel and each output's reduction serially (one GPU thread, one cpu task), so the single
// kernel ran at one thread's speed: on an H200, summing 1080 x 1920 x 3 floats to one took
// 190 ms; split, its first kernel has C threads.
#pragma once
#include <optional>
#include <utility>

#include "rlx/core/lir.h"

namespace rlx {

// The two kernels replacing reduction `k` (whose single store writes `out`), the first storing
// its partials into `partial` (a new buffer of `partial_shape`, `k`'s output dtype, that the
// caller adds to the program); nullopt when `k` is not worth splitting or cannot be split
// exactly (the chunked dim is read through an index expression or a guard, the output is a
// 16-bit float whose partials would round once more, or no reduced dim divides into chunks).
struct SplitReduction {
  lir::LoopKernel partials, combine;
  std::vector<int64_t> partial_shape;
};
std::optional<SplitReduction> split_reduction(const lir::LoopKernel& k, DType out_dtype,
                                              int32_t partial_buffer);

}  // namespace rlx
