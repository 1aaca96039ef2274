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
void quant_ops(OpFamily& f);   // ops_quant.cpp: block-format products
void collective_ops(OpFamily& f);  // ops_collective.cpp: all_reduce, send, recv, ...

}  // namespace rlx
