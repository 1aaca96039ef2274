// Tensor-parallel shards (Megatron style) of a decoder or bert: rank r of N keeps heads
// [r H/N, (r+1) H/N) of q, k and v (rows of their projections), the matching columns of the
// attention's output product, and rows r I/N.. of the MLP's input products with the matching
// columns of its output product. The output products give partial sums that the builders add
// up with an AllReduce (their biases kept by rank 0 alone), so every rank holds the whole
// hidden state. A decoder whose vocabulary divides by N also splits it: rows r V/N.. of the
// embedding table (each rank looks up the ids it holds, zeros for the others, and an AllReduce
// adds them) and of the lm head (each rank's logits, put together by an AllGather). Norms, and
// bert's embeddings, stay whole.
#pragma once
#include <memory>

#include "rlx/frontends/builders.h"

namespace rlx::frontends::detail {

// The shard's config: heads, kv_heads and intermediate divided by tp.size. Throws a user error
// when the model cannot be split that way (not a decoder, sizes not divisible).
TransformerConfig shard_config(const TransformerConfig& c, const TensorParallel& tp);
// Whether the shards of `c` split the vocabulary.
bool splits_vocab(const TransformerConfig& c, const TensorParallel& tp);

// `source` as rank tp.rank sees it: the split weights sliced (dense checkpoints only: a weight
// in a block or int8 format is a user error naming it), the others as they are.
std::unique_ptr<WeightSource> shard_weights(const WeightSource& source, const TransformerConfig& c,
                                            const TensorParallel& tp);

}  // namespace rlx::frontends::detail
