// A product's result finished element by element (a Linear's bias add) and then only moved into
// another layout (reshaped and transposed: the head split before attention) is written in the
// product's layout (decision 80). Fused into the transpose, the add made one kernel that no
// target can take apart: the product could not take the bias into its epilogue (cuBLASLt's, the
// cpu GEMM's), and attention could not read the split heads in place. Written apart, the add is
// an epilogue of the product and the transpose a plain copy the attention folds away; a target
// that folds neither runs one copy more.
#pragma once
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

// Marks such values materialised in `mat` (lower_to_lir's decision per value); `uses` counts
// each value's readers.
void keep_product_layouts(const Graph& g, const std::vector<int>& uses, std::vector<bool>& mat);

}  // namespace rlx
