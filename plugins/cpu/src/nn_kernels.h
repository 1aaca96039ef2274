// The cpu's native lowerings of transformer HIR ops (Attention, LayerNorm, RMSNorm, Softmax):
// which node signatures it claims, and running a claimed node's LIR call kernel
// ("native:<Op>"). The kernels themselves live in nn_attention.cpp and nn_norms.cpp; the
// backward ops of the norms and softmax are routed on to nn_backward_kernels.h.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

// The verdict for one of these ops, nullopt for any other op. Only f32 and the attribute
// combinations the kernels implement are claimed; the rest is refused with the reason, so
// dispatch takes the op's MIR decomposition (the shared-IR path).
std::optional<Verdict> claim_nn_op(const NodeSignature& s);
bool is_nn_callee(const std::string& callee);
void run_nn_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                   const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs);

}  // namespace rlx::cpu
