// Private helpers for graph passes.
#pragma once
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::passes {

// Rewrites every use of `from` (node operands and graph outputs) to `to`.
void replace_uses(Graph& g, ValueId from, ValueId to);
// Drops nodes with keep[i] == false and renumbers producers.
void compact(Graph& g, const std::vector<bool>& keep);
// Number of uses of each value (operands and graph outputs).
std::vector<int> use_counts(const Graph& g);

}  // namespace rlx::passes
