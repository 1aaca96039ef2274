// `--micro-batches M` with `--pp P` for inference (rlx run): a batch cut into M micro-batches flows
// through the stages one after another, so stage s works on micro-batch m while stage s + 1 works
// on m - 1, instead of every stage but one waiting for the whole batch.
//
// A stage graph (frontends/builders/src/pipeline.cpp) ends in a Broadcast of the last stage's
// results, a meeting of every rank that would stop the first stage from running ahead. Here the
// Broadcasts are taken out of the graph, each rank runs its stage over the M micro-batches (Send
// does not wait for the receiver), and the last stage's results, joined along the batch, are
// broadcast once at the end: every rank returns what one process would.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ranks.h"
#include "rlx/core/device.h"
#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/runtime.h"

namespace CLI {
class App;
}

namespace rlx::cli {

// --micro-batches M (rlx run and bench).
void add_micro_batches_option(CLI::App& app, std::optional<int64_t>& into);

// With --micro-batches in a rank of a --pp job: takes the result Broadcasts out of the graph
// `graph_name` of `model` and returns their root; -1 when the batch runs whole (no
// --micro-batches, or a single process). A usage error for --micro-batches without --pp.
int32_t prepare_micro_batches(Model& model, const std::string& graph_name,
                              const std::optional<int64_t>& micro_batches, const RankOptions& ranks,
                              const Channel* channel);

// The root of `g`'s result Broadcasts (the rank the others take the results from) after they
// are replaced by their operands; -1 when g has none (a graph that is no pipeline stage).
int32_t take_out_result_broadcasts(Graph& g);

// Runs `model` (a stage graph without its result Broadcasts) over `inputs` cut into
// `micro_batches` along the batch dim of `g`'s first input with a symbolic first dim, joins the
// outputs along their first dim and broadcasts them from `root` over `channel`. Usage errors when
// the batch does not split or an output has no batch dim.
NamedTensors run_micro_batches(CompiledModel& model, const Graph& g, const NamedTensors& inputs,
                               int64_t micro_batches, Channel& channel, int32_t root);

}  // namespace rlx::cli
