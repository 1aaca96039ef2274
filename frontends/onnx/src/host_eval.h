// Host evaluation of constant-only MIR: see host_eval.cpp.
#pragma once
#include <optional>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::onnx {

// Evaluates nodes [first, end) of g on the host, where every operand made before `first` must be
// a constant; returns the values of `outputs`, or nullopt when some node is not an evaluable
// primitive or a tensor has more than max_elements elements.
std::optional<std::vector<Tensor>> host_eval(const Graph& g, int32_t first,
                                             const std::vector<ValueId>& outputs,
                                             int64_t max_elements);

}  // namespace rlx::onnx
