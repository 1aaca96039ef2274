// A layout choice for the training step: products that read a trained weight transposed get the
// weight through an explicit transpose instead (see weight_layout.cpp).
#pragma once
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::train {

// A copy of `g` (MIR, params already inputs) where each dot_general whose rhs is one of
// `weights`, rank 2 and contracted over its last dim (Linear's x W^T) reads transpose(W) over
// its first dim instead. Same values under the same names, inputs in the same order (value ids
// differ: the graph is rebuilt).
Graph transpose_weights_for_products(const Graph& g, const std::vector<ValueId>& weights);

}  // namespace rlx::train
