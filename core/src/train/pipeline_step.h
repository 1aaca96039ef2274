// One rank's stage of a pipeline-parallel training step (rlx/core/pipeline_training.h): the
// programs of its stage and the 1F1B schedule that runs them over the micro-batches.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/optimizers.h"
#include "rlx/core/pipeline_training.h"
#include "rlx/core/runtime.h"

namespace rlx::train {

class PipelineStep {
 public:
  PipelineStep(std::shared_ptr<Target> target, const Graph& model, const OptimizerConfig& optimizer,
               const PipelineTraining& pp);

  // One update over `batch` (every model input, the whole batch: each stage takes what it
  // reads); returns the batch's mean loss on every rank. `step` counts the updates before.
  double step(const NamedTensors& batch, int64_t step);

  // This stage's parameters and optimizer state, by name.
  NamedTensors& params() { return params_; }
  NamedTensors& state() { return state_; }
  const std::vector<std::string>& param_names() const { return param_names_; }
  const std::vector<std::string>& state_names() const { return state_names_; }
  // Every stage's parameters' types by name (the whole model's: checks every rank makes alike).
  std::map<std::string, TensorType> model_params() const;

  // Replaces this stage's parameters and state (a resumed run's, by the same names and types);
  // what gather_to_first_stage() brought is dropped, being older.
  void restore(NamedTensors params, NamedTensors state);

  // Brings every other stage's parameters and state to stage 0 (gathered()); a collective: every
  // rank calls it.
  void gather_to_first_stage();
  const NamedTensors& gathered() const { return gathered_; }

  // Bytes of the working memory of this stage's largest program at the micro-batch's shapes.
  int64_t arena_bytes() const;

 private:
  struct Program {
    CompiledModel compiled;
    bool present = false;
  };
  NamedTensors micro_batch(const NamedTensors& batch, int32_t i) const;
  void forward(const NamedTensors& batch, int32_t i);
  void backward(const NamedTensors& batch, int32_t i);

  std::shared_ptr<Target> target_;
  PipelineTraining pp_;
  OptimizerConfig optimizer_;
  StageGraph stage_;
  std::vector<StageGraph> all_stages_;  // every stage's crossings and parameters (gather)
  std::vector<std::string> param_names_, state_names_, data_inputs_;
  Program receive_, forward_, backward_, update_, gather_;
  NamedTensors params_, state_, grads_, scratch_, gathered_;
  std::deque<NamedTensors> stash_;  // received values of micro-batches awaiting their backward
  double loss_sum_ = 0;
};

}  // namespace rlx::train
