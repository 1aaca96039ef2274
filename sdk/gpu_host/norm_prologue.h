// Whether a norm computes inside the product after it (module_plan.cpp's planning): a decode
// step's input and post-attention norms each feed one single-row product (q|k|v, gate|up, the
// vocabulary head), and a norm of one row is a launch of its own that costs about what a small
// product does (3.9 us on an H100 for a row of 1024; bench/RESULTS.md). The product's kernel
// reads the norm's input, computes the row's statistics as the norm would, and multiplies the
// normalised elements, rounded to the norm's output dtype: the same values, one launch fewer.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "dot_general_form.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

// `mm` reading the norm's input instead of its output, with the norm as its prologue, when the
// shapes fit: a single-row product (m == 1) over A contiguous along k, k the norm's row length,
// one product row per norm row, A the norm's output (`out_dtype`, after any convert taken into
// the norm), x read as plain rows and no epilogue; else nullopt. `norm_buffers` are the norm's
// storage buffers at `norm`'s positions.
std::optional<MatmulCall> with_norm_prologue(const MatmulCall& mm, const sdk::NormShape& norm,
                                             const std::vector<int32_t>& norm_buffers,
                                             DType out_dtype);

}  // namespace rlx::gpu_host
