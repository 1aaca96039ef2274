// Folding the head transposes around the cpu's native Attention into the call. A transformer
// computes q, k and v as [B, S, H * D] products, reshapes and transposes each into [B, H, S, D]
// for attention and transposes the result back: four copies of an activation per layer that do
// no arithmetic (at MiniLM batch 32, 6 MB each, read and written). The cpu Attention kernels read
// and write any layout whose last dim is contiguous (AttentionShape's strides), so:
//  * a loop kernel that only copies a buffer into a [B, H, S, D] operand of an Attention (one
//    load, affine, its last stride 1), read by nothing else, is dropped and the Attention reads
//    the buffer it copied, with the strides in the attribute "q_layout", "k_layout" or
//    "v_layout" = [offset, batch, head, position stride] (elements);
//  * a loop kernel that only copies the Attention's result into another layout (its load a
//    permutation of the result's dims, the last kept last) is dropped and the Attention writes
//    that layout: "o_layout".
// Offsets and strides must be multiples of 16 elements (whole vectors, and the pairs the AMX
// kernel gathers), and no operand may share storage with the result. Lifetimes are recomputed
// and the arena planned again.
#pragma once
#include "rlx/core/lir.h"

namespace rlx::cpu {

// Rewrites `p` in place; returns how many copies were folded.
int fold_attention_layouts(lir::Program& p);

}  // namespace rlx::cpu
