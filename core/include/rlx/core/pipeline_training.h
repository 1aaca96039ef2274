// Pipeline-parallel training (docs/training.md, "Pipeline parallelism"): a model whose first
// output is its loss is cut into stages, stage s on world rank s, each batch into micro-batches
// that flow through the stages on the 1F1B schedule.
//
//   rlx::PipelineTraining pp{.stages = 2, .micro_batches = 4, .stage = rank};
//   rlx::Trainer trainer(target, model, optimizer, pp);   // this rank's stage only
//   double loss = trainer.step(batch);                    // the whole batch's mean loss
//
// The cut is made on the graph, so any model that trains in one process can be split: an MLP,
// a model file ending in its loss, a decoder with its causal-LM loss.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

struct PipelineTraining {
  int32_t stages = 1;         // pipeline stages
  int32_t micro_batches = 1;  // each batch is cut into this many equal parts along its first dim
  int32_t stage = 0;          // this rank's stage
  // Data parallelism inside the stages: each stage runs on this many ranks, each with its own
  // share of every batch, their gradients averaged before the update. Stage-major: world rank
  // = stage x data_parallel + replica, so a stage's replicas are one "block:data_parallel"
  // communicator and Send/Recv connect equal replicas of neighbouring stages.
  int32_t data_parallel = 1;
  int32_t replica = 0;  // this rank's replica

  bool pipelined() const { return stages > 1 || micro_batches > 1; }
  int32_t rank_of(int32_t s) const { return s * data_parallel + replica; }
};

// A value crossing between two stages: sent forward by the stage that computes it (or that owns
// it, for a parameter read by a later stage too, as a tied embedding is), its cotangent sent
// back when it carries one.
struct StageCrossing {
  std::string name;  // the model's name of the value
  int32_t peer = 0;  // the other stage
  bool cotangent = false;
};

// One stage of a model split for pipeline training.
struct StageGraph {
  // The stage's part of the model. Inputs: the model's inputs this stage reads, then the values
  // it receives (under their names). Params: the parameters it owns (whose gradient and update
  // it computes), with their initial values in weights. Outputs: the loss on the last stage,
  // then each value it sends, once.
  Graph graph;
  std::vector<StageCrossing> received;  // in the order the stage receives them
  std::vector<StageCrossing> sent;      // one entry per receiving stage, in sending order
  bool has_loss = false;
};

// Cuts `model` (HIR or MIR, static shapes, outputs[0] a scalar loss depending on Graph::params)
// into `stages` consecutive stages, each starting at a node that reads a parameter for the first
// time and each about an equal share of the parameters (an embedding lookup counting as its
// result, not its table). Nodes that depend on no parameter (masks, positions, RoPE tables) are
// repeated in each stage that uses them instead of being sent. A user error when the model has
// fewer places to cut than stages - 1.
std::vector<StageGraph> split_for_pipeline(const Graph& model, int32_t stages);

}  // namespace rlx
