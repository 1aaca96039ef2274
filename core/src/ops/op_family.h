// How op families join the registry: each family is a function that adds its OpDefs to an
// OpFamily, listed once in op_registry.cpp (kFamilies). A new family is its own file plus one
// line there; no public header changes.
#pragma once
#include <utility>
#include <vector>

#include "rlx/core/op_registry.h"

namespace rlx {

class OpFamily {
 public:
  void add(OpDef def) { defs_.push_back(std::move(def)); }
  std::vector<OpDef>& defs() { return defs_; }

 private:
  std::vector<OpDef> defs_;
};

void mir_ops(OpFamily& f);     // ops_mir.cpp: the primitives
void hir_ops(OpFamily& f);     // ops_hir.cpp: elementwise, shape and linear-algebra graph ops
void hir_nn_ops(OpFamily& f);  // ops_hir_nn.cpp: attention, norms, activations
// ops_hir_nn_backward.cpp: LayerNormBackward, RMSNormBackward, SoftmaxBackward, AttentionBackward
void hir_nn_backward_ops(OpFamily& f);
// ops_hir_loss.cpp: SoftmaxCrossEntropy, SoftmaxCrossEntropyBackward
void loss_ops(OpFamily& f);
void quant_ops(OpFamily& f);   // ops_quant.cpp: block-format and int8 products
void pool_ops(OpFamily& f);    // ops_pool.cpp: MaxPool, AveragePool
void fake_quant_ops(OpFamily& f);  // ops_fake_quant.cpp: FakeQuantize (quantization-aware training)
void splat_ops(OpFamily& f);   // ops_splat.cpp: Gaussian splatting and its backward ops
void linalg_ops(OpFamily& f);  // ops_linalg.cpp: dense factorizations and solves
void sparse_ops(OpFamily& f);  // ops_sparse.cpp: CSR products and solves
void krylov_ops(OpFamily& f);  // ops_krylov.cpp: CG / PCG as while loops
// SpMV and SpMM as gather, multiply and scatter-add (ops_krylov.cpp).
DecomposeFn spmv_decomposition();
void complex_ops(OpFamily& f);     // ops_complex.cpp: Real, Imag, Complex, Conj
void collective_ops(OpFamily& f);  // ops_collective.cpp: all_reduce, send, recv, ...

}  // namespace rlx
