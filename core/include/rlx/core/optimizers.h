// Optimizers as graph: given parameters, their gradients and the optimizer's state as values of
// a graph, append the MIR that computes the updated parameters and state. The training step
// (trainer.h) feeds the state in and takes it back out, giving the memory of the old values to
// the new ones, so one compiled program holds forward, backward and update.
//
// Semantics follow PyTorch's torch.optim (SGD with dampening 0; Adam's weight decay is L2 added
// to the gradient, AdamW's is decoupled and scaled by the learning rate).
#pragma once
#include <string>
#include <vector>

#include "rlx/core/builder.h"

namespace rlx {

struct LrSchedule {
  enum class Kind { kConstant, kCosine } kind = Kind::kConstant;
  int64_t warmup_steps = 0;  // linear warm-up: lr * (step + 1) / warmup_steps for the first ones
  int64_t total_steps = 0;   // cosine: steps from lr down to min_lr (after warm-up)
  double min_lr = 0.0;
};

struct OptimizerConfig {
  enum class Kind { kSgd, kAdam, kAdamW } kind = Kind::kSgd;
  double lr = 0.01;
  double momentum = 0.0;  // sgd
  bool nesterov = false;  // sgd
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adam, adamw
  double clip_norm = 0.0;  // > 0: gradients scaled so their global L2 norm is at most this
  LrSchedule schedule;
  // > 1: data-parallel training over this many ranks (each with its share of every batch):
  // the step averages the gradients over the ranks (AllReduce mean) before the update, and the
  // loss it reports, so every rank keeps the same parameters.
  int32_t data_parallel = 1;
};

// "sgd:lr=0.02,momentum=0.9", "adamw:lr=1e-3,weight_decay=0.01,clip=1.0",
// "adam:lr=1e-3,schedule=cosine,warmup=100,total=1000"; a user error names a bad key or value.
OptimizerConfig parse_optimizer(const std::string& text);
std::string optimizer_text(const OptimizerConfig& c);  // the inverse, for reports

// The state each parameter carries: "m" for sgd with momentum, "m" and "v" for adam(w).
std::vector<std::string> optimizer_state_names(const OptimizerConfig& c);

// The learning rate at `step` (0-based), computed on the host exactly as the graph does.
double learning_rate_at(const OptimizerConfig& c, int64_t step);

struct OptimizerValues {
  std::vector<ValueId> params, grads;
  std::vector<std::vector<ValueId>> state;  // state[i][k]: state k of param i
  ValueId step = kNoValue;                  // f32 scalar: updates done before this one
  // With clipping: the sum of the squares of every gradient of the model, as sum_of_squares
  // gives it, when `grads` are only some of them (a pipeline stage's, the sum then taken over
  // the stages); kNoValue: computed here from `grads`.
  ValueId grad_sum_of_squares = kNoValue;
};
struct OptimizerUpdate {
  std::vector<ValueId> params;
  std::vector<std::vector<ValueId>> state;
};

// The sum of the squares of every element of `grads`, a scalar of `like`'s dtype (the step's):
// the square of their global L2 norm, which clipping scales them by.
ValueId sum_of_squares(GraphBuilder& b, const std::vector<ValueId>& grads, ValueId like);

// Appends clipping (when configured), the schedule and the update rule.
OptimizerUpdate append_optimizer(GraphBuilder& b, const OptimizerConfig& c, const OptimizerValues& v);

}  // namespace rlx
