// The HIR ops the mlx target hands to MLX's fused kernels (mlx::core::fast): LayerNorm, RMSNorm
// and Attention. RoPE stays decomposed: fast::rope rotates by a start offset, rlx's RoPE by an
// arbitrary positions tensor.
#pragma once
#include <mlx/array.h>

#include <functional>
#include <string>

#include "mlx_calls.h"
#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::mlx_target {

bool is_native_op(const std::string& op);
// The claim: yes with the note the dispatch report shows, or no with the reason.
Verdict claim(const NodeSignature& sig);
// The node as fast:: ops made through `calls` (mlx_calls.h); `in(k)` is its k-th input.
mlx::core::array build_native(const Node& n, const Graph& g, const MlxCalls& calls,
                              const std::function<mlx::core::array(size_t)>& in);

}  // namespace rlx::mlx_target
