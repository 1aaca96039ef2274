// Legality questions every GPU-like target asks of a node signature.
#pragma once
#include "rlx/core/target.h"

namespace rlx::gpu_host {

// Whether any input or output of the node has dtype `d` (a target lacking `d` refuses the node).
inline bool uses(const NodeSignature& s, DType d) {
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const TensorType& t : *list)
      if (t.dtype == d) return true;
  return false;
}

}  // namespace rlx::gpu_host
