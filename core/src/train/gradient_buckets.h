// Data parallelism's gradient exchange (training_graph.cpp): the gradients averaged over the
// ranks in a few large AllReduces rather than one per parameter.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/core/builder.h"

namespace rlx::train {

// Bytes a bucket holds before the next one starts (PyTorch DDP's default cap is 25 MB too).
inline constexpr int64_t kBucketBytes = int64_t{25} << 20;
// The first bucket (the last parameters' gradients, the first ones computed) closes at 1 MB, as
// DDP's does: its AllReduce then starts early in the backward pass and overlaps the rest
// (schedule_collectives_early, rlx/core/passes.h), instead of waiting for 25 MB of gradients.
inline constexpr int64_t kFirstBucketBytes = int64_t{1} << 20;

// Replaces each of `values` (gradients, and the loss) by its mean over the ranks. Values of one
// dtype are flattened into buckets of at most kBucketBytes (a larger value alone), filled from
// the back of the list: the backward pass computes the last parameters' gradients first, so the
// first bucket is the first one complete (and the smallest: `first_bucket_bytes`). One
// AllReduce per bucket, then each value sliced out.
// `comm`: the communicator of the AllReduces (rlx/core/communicator.h), every rank by default.
void all_reduce_mean_in_buckets(GraphBuilder& b, std::vector<ValueId>& values,
                                int64_t bucket_bytes = kBucketBytes,
                                const std::string& comm = "world",
                                int64_t first_bucket_bytes = kFirstBucketBytes);

}  // namespace rlx::train
