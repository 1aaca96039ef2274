// Layout choices for the training step's trained weights (see weight_layout.cpp).
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::train {

// A copy of `g` (MIR, params already inputs) where each dot_general whose rhs is one of
// `weights`, rank 2 and contracted over its last dim (Linear's x W^T) reads transpose(W) over
// its first dim instead. Same values under the same names, inputs in the same order (value ids
// differ: the graph is rebuilt).
Graph transpose_weights_for_products(const Graph& g, const std::vector<ValueId>& weights);

// The step keeps a weight that every use reads as Linear's W^T stored transposed ([in, out] for
// a model's [out, in]): `graph` is a copy of `g` whose input under that weight's name has the
// transposed type and whose products read it over its first dim. `transposed` names the weights
// so kept; everything else is as in transpose_weights_for_products.
struct WeightLayout {
  Graph graph;
  std::vector<std::string> transposed;
};
WeightLayout store_weights_transposed(const Graph& g, const std::vector<ValueId>& weights);

}  // namespace rlx::train
