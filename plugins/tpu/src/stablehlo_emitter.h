// MIR -> StableHLO: one MLIR module (text, stablehlo dialect plus chlo.erf) whose @main takes the
// graph's inputs, then its params (weights, uploaded once), and returns its outputs, then two
// i64 scalars per top-level gather/scatter (the first out-of-range index position, or the index
// count when none, and its value): XLA clamps indices, so the host raises the error rlx promises.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::tpu {

struct IndexCheck {
  std::string op;     // "gather" or "scatter"
  int64_t count = 0;  // number of indices
  int64_t axis_size = 0;
};

struct EmittedModule {
  std::string text;
  std::vector<ValueId> params;  // arguments after the inputs, in order
  size_t num_outputs = 0;       // the graph's outputs
  std::vector<IndexCheck> checks;
  size_t num_results() const { return num_outputs + 2 * checks.size(); }
};

// `g` is specialised (every dim static). Throws kUnsupported naming the node for what StableHLO
// cannot express (see can_emit).
EmittedModule emit_stablehlo(const Graph& g);

// Whether emit_stablehlo takes this MIR primitive at these dtypes, with the reason when not.
Verdict can_emit(const NodeSignature& sig);

}  // namespace rlx::tpu
