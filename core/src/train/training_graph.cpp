// Turns a model whose first output is a loss into the training step's graph.
#include <fmt/format.h>

#include <algorithm>

#include "rlx/core/autodiff.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/trainer.h"
#include "train/gradient_buckets.h"
#include "train/weight_layout.h"

namespace rlx {

namespace {

void name_value(Graph& g, ValueId v, const std::string& name) {
  if (auto existing = g.find_value(name); existing && *existing != v)
    throw_user_error(fmt::format("training: the model already has a value named %{}; rename it", name));
  g.values[v].name = name;
  g.reserve_name(name);
}

}  // namespace

Graph params_as_inputs(const Graph& g) {
  Graph out = g;
  out.inputs.insert(out.inputs.end(), out.params.begin(), out.params.end());
  out.params.clear();
  out.weights.clear();
  return out;
}

TrainingGraph build_training_graph(const Graph& model, const OptimizerConfig& optimizer) {
  if (model.outputs.empty())
    throw_user_error("training: the model has no output; its first output must be the loss");
  if (model.params.empty())
    throw_user_error("training: the model has no parameters (Graph::params) to train");
  // Autodiff gives complex cotangents (docs/training.md), but Adam's second moment and weight
  // decay are written for real values: a c64 parameter would be updated wrongly, not refused.
  for (ValueId p : model.params)
    if (is_complex(model.type(p).dtype))
      throw_user_error(fmt::format(
          "training: parameter %{} is {}; the optimizers update real parameters only: keep its "
          "real and imaginary parts as two f32 parameters and join them with Complex(re, im)",
          model.values[p].name, model.type(p).str()));
  // The update runs in the parameter's dtype: in 16 bits Adam's eps (1e-8) is 0 and a squared
  // small gradient is 0 too, so the step divides 0 by 0 and the run "diverges" for no reason the
  // user could see. Until optimizers keep f32 copies, such a parameter is refused up front.
  for (ValueId p : model.params)
    if (model.type(p).dtype == DType::kF16 || model.type(p).dtype == DType::kBF16)
      throw_user_error(fmt::format(
          "training: parameter %{} is {}; the optimizers update f32 and f64 parameters only (in 16 "
          "bits Adam's eps and small squared gradients round to 0): widen the model's weights to "
          "f32 first (a Hugging Face checkpoint: load it with torch_dtype=torch.float32 and "
          "save_pretrained)",
          model.values[p].name, model.type(p).str()));
  TrainingGraph t;
  // Parameters become inputs: they change every step, so they cannot be constants.
  Graph mir = params_as_inputs(decompose_to_mir(model));
  const auto first_param = static_cast<int64_t>(mir.inputs.size() - model.params.size());
  train::WeightLayout layout = train::store_weights_transposed(
      mir, std::vector<ValueId>(mir.inputs.begin() + first_param, mir.inputs.end()));
  Graph& g = t.graph = std::move(layout.graph);
  // The copy keeps the order of inputs: the parameters are still the last ones.
  std::vector<ValueId> params(g.inputs.begin() + first_param, g.inputs.end());
  ValueId loss = g.outputs[0];
  std::vector<ValueId> grads = append_gradients(g, loss, params);

  GraphBuilder b(g);
  b.set_loc("optimizer");
  // Data parallelism: each rank's gradients are its share of the batch's; their mean over the
  // ranks is the whole batch's (equal shares of a mean loss), taken before any update.
  ValueId reported = loss;
  if (optimizer.data_parallel > 1) {
    // The loss rides in the gradients' buckets: one AllReduce per bucket, not per value.
    std::vector<ValueId> exchanged = grads;
    exchanged.push_back(loss);
    train::all_reduce_mean_in_buckets(b, exchanged);
    reported = exchanged.back();
    exchanged.pop_back();
    grads = exchanged;
    // The rank's own loss gives its name to the mean the step reports.
    if (g.values[loss].name == TrainingGraph::kLoss) g.values[loss].name = g.fresh_name("rank_loss");
  }
  OptimizerValues v;
  v.params = params;
  v.grads = grads;
  v.step = b.input(TrainingGraph::kStep, {DType::kF32, {}});
  const std::vector<std::string> kinds = optimizer_state_names(optimizer);
  for (ValueId p : params) {
    const std::string& name = g.values[p].name;
    t.params.push_back(name);
    const bool transposed = std::find(layout.transposed.begin(), layout.transposed.end(), name) !=
                            layout.transposed.end();
    if (transposed) t.transposed.insert(name);
    std::vector<ValueId> state;
    for (const std::string& k : kinds) {
      std::string sname = "optimizer." + k + "." + name;
      t.state.push_back(sname);
      if (transposed) t.transposed.insert(sname);
      state.push_back(b.input(sname, g.type(p)));
    }
    v.state.push_back(state);
  }
  OptimizerUpdate up = append_optimizer(b, optimizer, v);

  // Every output is a distinct node result: the loss is computed by the model, and each new
  // parameter or state value by its own update node.
  if (g.values[loss].producer < 0)
    throw_user_error(fmt::format("training: the loss %{} is a graph input; it must be computed by the model",
                                 g.values[loss].name));
  g.outputs.clear();
  name_value(g, reported, TrainingGraph::kLoss);
  g.outputs.push_back(reported);
  size_t s = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    name_value(g, up.params[i], TrainingGraph::next(t.params[i]));
    g.outputs.push_back(up.params[i]);
    for (ValueId ns : up.state[i]) {
      name_value(g, ns, TrainingGraph::next(t.state[s++]));
      g.outputs.push_back(ns);
    }
  }
  // Products of the backward pass that read a weight transposed (g W, for a weight kept as
  // W^T) get it through one transpose per step (weight_layout.cpp says why).
  t.graph = train::transpose_weights_for_products(g, params);
  verify_graph(t.graph);
  return t;
}

}  // namespace rlx
