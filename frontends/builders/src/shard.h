// Tensor-parallel shards of a decoder (Megatron style): rank r of N keeps heads
// [r H/N, (r+1) H/N) of q, k and v (rows of their projections), the matching columns of o_proj,
// and rows r I/N.. of gate_proj and up_proj with the matching columns of down_proj; the
// embedding, norms and lm_head stay whole. Each rank's o_proj and down_proj products are partial
// sums that the decoder adds up with an AllReduce, so every rank holds the whole hidden state.
#pragma once
#include <memory>

#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

// The shard's config: heads, kv_heads and intermediate divided by tp.size. Throws a user error
// when the model cannot be split that way (not a decoder, sizes not divisible).
TransformerConfig shard_config(const TransformerConfig& c, const TensorParallel& tp);

// `source` as rank tp.rank sees it: the split weights sliced (dense checkpoints only: a weight
// in a block or int8 format is a user error naming it), the others as they are.
std::unique_ptr<WeightSource> shard_weights(const WeightSource& source, const TransformerConfig& c,
                                            const TensorParallel& tp);

}  // namespace rlx::frontends::detail
