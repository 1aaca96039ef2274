// How `rlx run` and `rlx bench` spread one batch over the ranks of a job (docs/parallel.md):
//
// * Data-parallel replicas: a job of more ranks than --tp x --pp (`--nproc 4 --tp 2`) holds
//   several copies of the split model, each on a group of tp x pp consecutive ranks, and each
//   copy takes an equal share of the batch's rows; the graph's collectives are confined to its
//   group (replicas.h) and the shares are gathered at the end.
// * Micro-batches (`--pp P --micro-batches M`): a share cut into M pieces that flow through the
//   stages one after another, so stage s works on piece m while stage s + 1 works on m - 1,
//   instead of every stage but one waiting for the whole batch. A stage graph
//   (frontends/builders/src/pipeline.cpp) ends in a Broadcast of the last stage's results, a
//   meeting of every rank that would stop the first stage from running ahead: it becomes an
//   identity, each rank runs its stage over the M pieces (Send does not wait for the receiver),
//   and the last stage's results, joined along the batch, are shared once at the end.
//
// Either way every rank returns what one process would.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ranks.h"
#include "replicas.h"
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

struct BatchPlan {
  int64_t micro_batches = 0;  // 0: the share runs whole
  // Within a replica's group: the rank whose results are taken (the last stage's, once the
  // graph's result Broadcasts are identities; 0 when every rank of the group has them).
  int32_t root = 0;
  Replicas replicas;
  bool splits() const { return micro_batches > 0 || replicas.count > 1; }
};

// Prepares the graph `graph_name` of `model` (this rank's shard or stage) for the plan the
// options ask for, before it is compiled: its collectives confined to this rank's replica, its
// result Broadcasts made identities for micro-batches. Usage errors for --micro-batches without
// --pp. Nothing splits outside a job of several ranks.
BatchPlan plan_batch(Model& model, const std::string& graph_name,
                     const std::optional<int64_t>& micro_batches, const RankOptions& ranks,
                     const Channel* channel);

// Runs `model` (compiled from the graph plan_batch prepared, `g`) over this rank's share of
// `inputs` as the plan says and returns the whole batch's results on every rank. The batch is the
// first dim of the inputs whose first dim is the symbol of the first symbolic input's; usage
// errors when it does not split, or when an output has no batch dim to join along.
NamedTensors run_batch(CompiledModel& model, const Graph& g, const NamedTensors& inputs,
                       const BatchPlan& plan, Channel& channel);

}  // namespace rlx::cli
