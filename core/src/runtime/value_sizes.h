// A bound on the size of every value of a specialised graph, checked before it is lowered or run.
#pragma once
#include "rlx/core/graph.h"
#include "rlx/core/shape.h"

namespace rlx {

// Throws a user error naming the first node whose output would take more bytes than this
// machine's memory (or than 64-bit arithmetic holds), with its type and the sizes bound for the
// graph's symbols: such sizes come from the user (an input's shape, a --bind, a shape in the
// model) and would otherwise end in an allocation failure or an overflow inside a target.
void check_value_sizes(const Graph& g, const Bindings& bindings);

}  // namespace rlx
