// Attention on tensor cores for the cuda target: a flash-attention kernel (online softmax over
// tiles of 64 keys, scores and the output accumulated in f32 by mma.sync m16n8k16) for f16 and
// bf16 q, k and v. The SDK's render_attention computes on CUDA cores and stays the kernel for
// everything this one does not take.
#pragma once
#include <optional>
#include <string>

#include "rlx/sdk/render.h"

namespace rlx::cuda {

// Why the tensor-core kernel does not take `shape` ("" when it does): f32 or mixed dtypes, a
// head dimension that is not a multiple of 16 up to 128, a different value dimension, a query
// of fewer than 16 rows (decode: the SDK's row kernel is the right one there), or
// RLX_CUDA_ATTENTION=tiled.
std::string tensor_core_attention_refusal(const sdk::AttentionShape& shape);

// The kernel for `shape` when it takes it. It needs sm_80 or newer: NVRTC stops with an error
// naming RLX_CUDA_ATTENTION=tiled on an older architecture, never a wrong result.
std::optional<sdk::AttentionKernel> tensor_core_attention(const sdk::AttentionShape& shape);

}  // namespace rlx::cuda
