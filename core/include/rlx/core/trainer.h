// Training: one compiled program per step holding the forward pass, the loss, the backward pass
// and the optimizer's update.
//
//   Graph model = ...;                    // outputs[0]: a scalar loss; Graph::params are trained,
//                                         // starting from Graph::weights
//   rlx::Trainer trainer(target, model, rlx::parse_optimizer("sgd:lr=0.02,momentum=0.9"));
//   double loss = trainer.step({{"x", images}, {"labels", labels}});
//   trainer.save("run.safetensors");      // parameters, optimizer state and step count
//
// Parameters and optimizer state are inputs and outputs of the program. Each step writes the
// new values into the memory of the values two steps old, and the two sets swap, so a step
// allocates and copies nothing once the first one has run.
#pragma once
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "rlx/core/optimizers.h"
#include "rlx/core/pipeline_training.h"
#include "rlx/core/runtime.h"

namespace rlx {

struct TrainingGraph {
  Graph graph;                      // MIR: loss, gradients, update
  std::vector<std::string> params;  // trained parameters, in the model's order
  std::vector<std::string> state;   // optimizer state inputs ("optimizer.m.<param>", ...)
  // Rank-2 parameters (and their state) the step keeps transposed, [in, out] for a model's
  // [out, in] weight that every product reads as W^T: their inputs and outputs in `graph` have
  // the transposed shape; Trainer shows them to its user in the model's layout.
  std::set<std::string> transposed;
  // Names of the program's values: output `next(name)` is the new value of input `name`.
  static std::string next(const std::string& name) { return name + ".next"; }
  static constexpr const char* kLoss = "loss";
  static constexpr const char* kStep = "optimizer.step";  // f32 scalar input: updates done
};

// The same graph with its params as inputs (and no weights): parameters that change between
// runs (training, or evaluating while training) without compiling again.
Graph params_as_inputs(const Graph& g);

// The training program of `model` (HIR or MIR; outputs[0] must be a float scalar loss): its
// params become inputs, and the program returns the loss, the updated params and state.
TrainingGraph build_training_graph(const Graph& model, const OptimizerConfig& optimizer);

namespace train {
class PipelineStep;
}

class Trainer {
 public:
  Trainer(std::shared_ptr<Target> target, const Graph& model, OptimizerConfig optimizer);
  // Pipeline-parallel (pp.stages > 1: this rank's stage of the model) or with the batch cut
  // into pp.micro_batches whose gradients add up before one update (rlx/core/pipeline_training.h;
  // `model` then needs static shapes: those of one micro-batch). parameters() and save() see
  // this stage's parameters, and after gather_stages() on stage 0 every stage's.
  Trainer(std::shared_ptr<Target> target, const Graph& model, OptimizerConfig optimizer,
          const PipelineTraining& pp);
  ~Trainer();
  Trainer(Trainer&&) noexcept;
  Trainer& operator=(Trainer&&) noexcept;
  // Copies every stage's parameters and optimizer state to stage 0; a collective every rank
  // calls (nothing to do without pipeline stages).
  void gather_stages();
  // One update on `batch` (the model's inputs by name); returns the loss before the update.
  double step(const NamedTensors& batch);
  int64_t steps() const { return steps_; }
  // Current parameter values by name (brought to the host first when they live on a device).
  const NamedTensors& parameters() const;
  const OptimizerConfig& optimizer() const { return optimizer_; }
  // Writes parameters (under their names), optimizer state ("optimizer.m.<param>", ...) and the
  // step count ("optimizer.step") as safetensors, the optimizer's text in the metadata.
  void save(const std::filesystem::path& file) const;
  // Reads what save wrote: every parameter must be there with its dtype and shape; state and the
  // step are restored when present (a weights-only file starts the optimizer afresh). Pipelined,
  // each stage takes its own parameters and state from the file (save after gather_stages()
  // writes every stage's), so every rank loads the same file; other tensors are ignored.
  void load(const std::filesystem::path& file);
  // Bytes of the step's working memory (its arena of temporaries) for a batch of these shapes,
  // and of the parameters and state it keeps (two sets of each, see above).
  int64_t arena_bytes(const NamedTensors& batch) const;
  int64_t kept_bytes() const;
  CompiledModel& program() { return program_; }
  const TrainingGraph& graph() const { return graph_; }

 private:
  OptimizerConfig optimizer_;
  TrainingGraph graph_;
  CompiledModel program_;
  std::unique_ptr<train::PipelineStep> pipeline_;  // instead of program_ when pipelined
  // On a target with a device (contract 2.0), parameters and optimizer state stay there between
  // steps (device_params_, device_state_; their `.next` outputs in device_outputs_) and only the
  // batch, the step count and the loss cross; params_ and state_ are then host copies refreshed
  // when read (host_stale_). On the cpu they are the values themselves.
  void to_device();
  void sync_host() const;
  // `kept` (params_ or state_) with the tensors the step keeps transposed swapped back.
  NamedTensors in_model_layout(const NamedTensors& kept) const;
  mutable NamedTensors shown_params_;  // what parameters() returns when some are transposed
  std::shared_ptr<Device> device_;
  mutable NamedTensors params_, state_;
  NamedDeviceTensors device_params_, device_state_, device_outputs_;
  mutable bool host_stale_ = false;
  NamedTensors inputs_, outputs_;
  int64_t steps_ = 0;
};

}  // namespace rlx
