// The cpu's native lowerings of the norms' and softmax's backward ops (LayerNormBackward,
// RMSNormBackward, SoftmaxBackward; core/src/ops/ops_hir_nn_backward.cpp) and of softmax
// cross-entropy and its backward op (core/src/ops/ops_hir_loss.cpp): f32 and f64, one fused pass
// per row, parallel over rows. nn_kernels.cpp routes their claims and call kernels
// ("native:<Op>") here.
#pragma once
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "rlx/core/attr.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"

// The row loops of both files get an AVX-512 and an AVX2 clone picked at load time, as the
// generated loop kernels they replace are built for the host's ISA. Sums run in explicit lanes
// (kLanes: one 512-bit register) combined in a fixed order, so every clone computes the same bits
// (no fp contraction: see CMakeLists.txt).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RLX_ROW_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RLX_ROW_CLONES
#endif

namespace rlx::cpu {

template <typename T>
constexpr int kLanes = 64 / static_cast<int>(sizeof(T));

// A numeric attr of these ops (an epsilon, a scale, an axis), `fallback` where the node has none.
// Shared here so the norm, softmax and attention kernels read attrs the same way.
inline double number_attr(const Attrs& a, const char* key, double fallback) {
  auto it = a.find(key);
  if (it == a.end()) return fallback;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  return static_cast<double>(std::get<int64_t>(it->second));
}

// The verdict for one of these ops, nullopt for any other op. What the kernels do not implement
// (other dtypes, a [1] scale) is refused with the reason, so dispatch takes the decomposition.
std::optional<Verdict> claim_nn_backward_op(const NodeSignature& s);
// `op` is the op's name, without "native:".
bool is_nn_backward_op(const std::string& op);
void run_nn_backward_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs);

// SoftmaxCrossEntropy and SoftmaxCrossEntropyBackward (loss_kernels.cpp): f32 and f64 logits, i32
// or i64 labels; a label outside [0, C) is a user error naming the node. claim_nn_backward_op,
// is_nn_backward_op and run_nn_backward_kernel route them here.
bool is_loss_op(const std::string& op);
Verdict claim_loss_op(const NodeSignature& s);
void run_loss_kernel(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                     const std::vector<void*>& ptrs);

// AttentionBackward (attention_backward_kernel.cpp): f32 and f64, parallel over (batch, kv head).
Verdict claim_attention_backward(const NodeSignature& s);
void run_attention_backward(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                            const std::vector<void*>& ptrs);

}  // namespace rlx::cpu
