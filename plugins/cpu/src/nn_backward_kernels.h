// The cpu's native lowerings of the norms' and softmax's backward ops (LayerNormBackward,
// RMSNormBackward, SoftmaxBackward; core/src/ops/ops_hir_nn_backward.cpp): f32 and f64, one
// fused pass per row, parallel over rows. nn_kernels.cpp routes their claims and call kernels
// ("native:<Op>") here.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

// The verdict for one of these ops, nullopt for any other op. What the kernels do not implement
// (other dtypes, a [1] scale) is refused with the reason, so dispatch takes the decomposition.
std::optional<Verdict> claim_nn_backward_op(const NodeSignature& s);
// `op` is the op's name, without "native:".
bool is_nn_backward_op(const std::string& op);
void run_nn_backward_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs);

// AttentionBackward (attention_backward_kernel.cpp): f32 and f64, parallel over (batch, kv head).
Verdict claim_attention_backward(const NodeSignature& s);
void run_attention_backward(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs);

}  // namespace rlx::cpu
