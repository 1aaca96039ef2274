// Turns a model whose first output is a loss into the training step's graph.
#include <fmt/format.h>

#include "rlx/core/autodiff.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/trainer.h"

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
  TrainingGraph t;
  // Parameters become inputs: they change every step, so they cannot be constants.
  Graph& g = t.graph = params_as_inputs(decompose_to_mir(model));
  ValueId loss = g.outputs[0];
  std::vector<ValueId> params(g.inputs.end() - static_cast<int64_t>(model.params.size()), g.inputs.end());
  std::vector<ValueId> grads = append_gradients(g, loss, params);

  GraphBuilder b(g);
  b.set_loc("optimizer");
  OptimizerValues v;
  v.params = params;
  v.grads = grads;
  v.step = b.input(TrainingGraph::kStep, {DType::kF32, {}});
  const std::vector<std::string> kinds = optimizer_state_names(optimizer);
  for (ValueId p : params) {
    const std::string& name = g.values[p].name;
    t.params.push_back(name);
    std::vector<ValueId> state;
    for (const std::string& k : kinds) {
      std::string sname = "optimizer." + k + "." + name;
      t.state.push_back(sname);
      state.push_back(b.input(sname, g.type(p)));
    }
    v.state.push_back(state);
  }
  OptimizerUpdate up = append_optimizer(b, optimizer, v);

  g.outputs.clear();
  // An output that is also another output or an input (a loss read straight from an input)
  // gets its own copy so every output has its own name.
  auto own = [&](ValueId x) {
    bool taken = g.values[x].producer < 0;
    for (ValueId o : g.outputs) taken = taken || o == x;
    return taken ? b.add(x, b.full_like(x, 0.0)) : x;
  };
  ValueId l = own(loss);
  name_value(g, l, TrainingGraph::kLoss);
  g.outputs.push_back(l);
  size_t s = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    ValueId np = own(up.params[i]);
    name_value(g, np, TrainingGraph::next(t.params[i]));
    g.outputs.push_back(np);
    for (ValueId ns : up.state[i]) {
      ValueId o = own(ns);
      name_value(g, o, TrainingGraph::next(t.state[s++]));
      g.outputs.push_back(o);
    }
  }
  verify_graph(g);
  return t;
}

}  // namespace rlx
