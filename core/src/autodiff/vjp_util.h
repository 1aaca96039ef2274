// Helpers shared by the vector-Jacobian rules of the MIR primitives (vjp_*.cpp) and the table
// that attaches them to the op registry.
#pragma once
#include <map>
#include <string>

#include "rlx/core/builder.h"
#include "rlx/core/op_registry.h"

namespace rlx::autodiff {

using Rules = std::map<std::string, GradientFn>;

void elementwise_rules(Rules& rules);  // vjp_elementwise.cpp
void structural_rules(Rules& rules);   // vjp_structural.cpp: shapes, indexing, reductions, dot
void linalg_rules(Rules& rules);       // vjp_linalg.cpp: the dense solvers (HIR ops)
void nn_rules(Rules& rules);           // vjp_nn.cpp: LayerNorm, RMSNorm, Softmax (HIR ops)
// Every rule, keyed by op name; op_registry.cpp attaches them to the OpDefs.
Rules mir_gradient_rules();

// A scalar of x's dtype broadcast to x's shape.
inline ValueId fill(GraphBuilder& b, ValueId like, double v) { return b.full_like(like, v); }
// 1 where pred holds, 0 elsewhere, in `like`'s dtype and shape.
inline ValueId mask(GraphBuilder& b, ValueId pred, ValueId like) {
  return b.select(pred, fill(b, like, 1.0), fill(b, like, 0.0));
}
// conj(x) for a c64 value, x itself otherwise. Complex cotangents follow PyTorch's convention:
// the cotangent of z = x + iy is dL/dx + i dL/dy (L real), so for a holomorphic y = f(z) the
// input's cotangent is g * conj(f'(z)), and a rule multiplies by the conjugate of every factor
// it takes from the forward values.
inline ValueId conj_if_complex(GraphBuilder& b, ValueId x) {
  return is_complex(b.type(x).dtype) ? b.op("Conj", {x}) : x;
}
// A transpose that is left out when it is the identity.
ValueId transpose_if_needed(GraphBuilder& b, ValueId x, const IntList& perm);

}  // namespace rlx::autodiff
