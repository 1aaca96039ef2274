// A specialised MIR graph (plus the HIR ops the target claims natively, native_ops.h) as MLX
// arrays: a function of the graph's inputs, its params (weights) and its top-level constants, in
// that order, returning the graph's outputs, then two i64 scalars per top-level gather/scatter
// (the position of the first index outside [-len, len), the index count when none, and that
// index): MLX does not check indices, so the host raises the error rlx promises. Loops (while)
// run on the host, evaluating their condition each trip, so a graph with one is not compiled.
#pragma once
#include <mlx/array.h>

#include <string>
#include <vector>

#include "mlx_calls.h"
#include "rlx/core/graph.h"
#include "rlx/core/target.h"

namespace rlx::mlx_target {

struct IndexCheck {
  std::string op;     // "gather" or "scatter"
  int64_t count = 0;  // number of indices
  int64_t axis_size = 0;
};

// The index checks build() appends, in order.
std::vector<IndexCheck> index_checks(const Graph& g);
// The top-level constants, in node order: built once, passed to every call of build().
std::vector<mlx::core::array> constants(const Graph& g);
bool has_loops(const Graph& g);

// With a recorder, every MLX call is also written to it (mlx_calls.h): the standalone program
// (program_writer.h). A graph with a loop is then refused, naming the loop.
std::vector<mlx::core::array> build(const Graph& g, const std::vector<mlx::core::array>& args,
                                    CallRecorder* recorder = nullptr);

// Whether build() maps this MIR primitive at these dtypes, with the reason when not.
Verdict can_build(const NodeSignature& sig);

}  // namespace rlx::mlx_target
