// Pieces of kernel text the cuda target's own attention kernels share (tensor_core_attention.cpp,
// decode_attention.cpp): where a row of q, k, v or the output starts in its layout, the mask test
// of the HIR op, the parameter list by buffer position, and token substitution.
#pragma once
#include <map>
#include <string>

#include "rlx/sdk/render.h"

namespace rlx::cuda {

// Element offset of row `row` of operand 'q', 'k', 'v' or 'o' (the output) for batch `b` and the
// operand's head (`h` for q and the output, `hk` for k and v): in [B, heads, S, dim], or with
// split heads (merged heads for the output) in rows of [B, S, R] (AttentionShape::*_row).
std::string attention_row_offset(const sdk::AttentionShape& shape, char operand,
                                 const std::string& row);
// Elements from one row of that operand to the next: R split (merged), else its dim.
int64_t attention_row_step(const sdk::AttentionShape& shape, char operand);

// A C expression, true where key `key` is masked for query row `row` of batch `b`: causal aligns
// the last query with the last key; padding reads the mask (zero means masked); none is false.
std::string attention_mask_test(const sdk::AttentionShape& shape);

// "const uint16_t* __restrict__ b0, ..." for q, k, v, the mask (padding) and out, by position.
std::string attention_params(const sdk::AttentionShape& shape);

// A load of element `at` of buffer `b` as f32, and a store expression of f32 `value` as `dtype`.
std::string load_f32(DType dtype, const std::string& buffer, const std::string& at);
std::string from_f32(DType dtype, const std::string& value);

// The tokens every attention kernel's text uses: SYM (the kernel's symbol), PARAMS, B, H, HKV, SQ,
// SK, D, DV, MASK, MASKED (attention_mask_test) and SCALE (an f32 literal without its suffix).
std::map<std::string, std::string> attention_tokens(const sdk::AttentionShape& shape);

// `text` with every @KEY@ replaced by its value.
std::string fill_tokens(std::string text, const std::map<std::string, std::string>& values);

}  // namespace rlx::cuda
