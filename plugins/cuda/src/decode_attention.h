// Attention for a short query (a decode step: one to fifteen rows) on the cuda target. The SDK's
// row kernel gives each query row one thread, which then walks every key and every dimension
// alone: 16 threads for a batch-1 step of 16 heads, 1.8 ms per layer at 576 keys on an H200. Here
// the keys of each query row are split into chunks, a block of 256 threads per (row, chunk), and
// the last block of a row combines the chunks' partial softmax results (flash-decoding), with the
// partial results and a counter per row in the program's scratch buffer.
#pragma once
#include <optional>

#include "rlx/sdk/render.h"

namespace rlx::cuda {

// The kernel for `shape` when its query has fewer than 16 rows, every tensor is f32, f16 or bf16,
// q, k and v rows hold at most 256 elements and there are at most 8192 keys (a chunk's scores
// stay in shared memory); nullopt otherwise, or with RLX_CUDA_ATTENTION=tiled.
std::optional<sdk::AttentionKernel> decode_attention(const sdk::AttentionShape& shape);

}  // namespace rlx::cuda
