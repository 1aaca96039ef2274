// Reverse-mode automatic differentiation on MIR.
//
//   Graph g = decompose_to_mir(model);                 // HIR ops through their decompositions
//   std::vector<ValueId> grads = append_gradients(g, loss, params);
//
// append_gradients walks the nodes between the parameters and the loss backwards and appends,
// for each, the graph its op's vector-Jacobian rule (OpDef::gradient, core/src/autodiff) builds.
// Only floating-point values carry cotangents: integer and bool values (indices, masks,
// comparisons) stop the backward flow, and piecewise-constant ops (floor, sign, ...) give zero.
// An op on the path with no rule (while) is a user error naming the node.
#pragma once
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

// The graph with every HIR node replaced by its MIR decomposition (rewrites included, as
// dispatch does for a target that claims nothing natively). Values keep their names.
Graph decompose_to_mir(const Graph& g);

// Appends to `g` (MIR) the nodes computing d loss / d v for each v of `wrt` (graph inputs,
// params or node results); returns those gradient values, in order and typed like `wrt`. A value
// the loss does not depend on gets zeros. `loss` must be a floating-point scalar. Outputs of g
// are left as they are.
std::vector<ValueId> append_gradients(Graph& g, ValueId loss, const std::vector<ValueId>& wrt);

// The vector-Jacobian product: appends the nodes computing sum_i <cotangents[i], d outputs[i] /
// d v> for each v of `wrt`, each cotangent typed like its output (a pipeline stage's backward
// pass, whose outputs' cotangents come from the next stage). append_gradients is the case of
// one scalar output and a cotangent of 1.
std::vector<ValueId> append_vjp(Graph& g, const std::vector<ValueId>& outputs,
                                const std::vector<ValueId>& cotangents,
                                const std::vector<ValueId>& wrt);

}  // namespace rlx
