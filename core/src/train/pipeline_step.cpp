// The programs of one pipeline stage and the 1F1B schedule (docs/training.md, "Pipeline
// parallelism").
//
// A stage keeps no activations between its forward and backward pass of a micro-batch other
// than the values it received: its backward program recomputes the stage's forward from them
// (activation recomputation at stage boundaries). That keeps each program an ordinary graph
// (forward, then append_vjp) and the memory held per micro-batch in flight to its inputs, at the
// price of running each stage's forward twice. Sends are asynchronous on the cpu's engine (the
// data is copied, the send completes by the next collective), so a stage that sends and then
// waits for a peer never waits on that peer's receive: the schedule below cannot deadlock.
#include "train/pipeline_step.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "rlx/core/autodiff.h"
#include "rlx/core/error.h"
#include "rlx/core/trainer.h"
#include "train/gradient_buckets.h"
#include "train/weight_layout.h"

namespace rlx::train {

namespace {

constexpr const char* kLossIn = "pipeline.loss";

std::string grad_name(const std::string& param) {
  return "grad." + param;
}

void set_name(Graph& g, ValueId v, const std::string& name) {
  g.values[v].name = name;
  g.reserve_name(name);
}

ValueId value_named(const Graph& g, const std::string& name) {
  std::optional<ValueId> v = g.find_value(name);
  if (!v) throw_internal_error(fmt::format("pipeline stage: no value %{}", name));
  return *v;
}

ValueId zeros(GraphBuilder& b, const TensorType& t) {
  return b.broadcast_in_dim(b.scalar(t.dtype, 0.0), t.shape, {});
}

// The stage's graph as the step runs it: MIR, parameters as inputs, products reading trained
// weights through an explicit transpose (weight_layout.h).
Graph stage_mir(const StageGraph& stage) {
  Graph mir = params_as_inputs(decompose_to_mir(stage.graph));
  std::vector<ValueId> params;
  for (ValueId p : stage.graph.params)
    params.push_back(value_named(mir, stage.graph.values[p].name));
  Graph g = transpose_weights_for_products(mir, params);
  g.outputs.clear();
  return g;
}

// Receives the values the stage reads from earlier stages, in the order they were sent.
Graph receive_graph(const StageGraph& stage) {
  Graph g;
  g.name = stage.graph.name + "_receive";
  for (const StageCrossing& r : stage.received) g.reserve_name(r.name);
  GraphBuilder b(g);
  for (const StageCrossing& r : stage.received) {
    const TensorType& t = stage.graph.type(value_named(stage.graph, r.name));
    ValueId v = b.op("Recv", {zeros(b, t)}, {{"peer", int64_t{r.peer}}});
    set_name(g, v, r.name);
    b.output(v);
  }
  return g;
}

// The stage's forward pass, sending what later stages read (every stage but the last).
Graph forward_graph(const StageGraph& stage) {
  Graph g = stage_mir(stage);
  GraphBuilder b(g);
  b.set_loc("pipeline");
  for (const StageCrossing& s : stage.sent)
    b.output(b.op("Send", {value_named(g, s.name)}, {{"peer", int64_t{s.peer}}}));
  return g;
}

// The forward pass again, then the backward pass from the cotangents later stages send back (and
// the loss, on the last stage): the parameters' gradients added to their running sums, the
// received values' cotangents sent to the stages that computed them.
Graph backward_graph(const StageGraph& stage, const std::vector<std::string>& params) {
  Graph g = stage_mir(stage);
  GraphBuilder b(g);
  b.set_loc("pipeline");
  std::vector<ValueId> outs, cts;
  if (stage.has_loss) {
    ValueId loss = value_named(g, stage.graph.values[stage.graph.outputs[0]].name);
    outs.push_back(loss);
    cts.push_back(b.scalar(g.type(loss).dtype, 1.0));
    b.output(loss);
  }
  for (const StageCrossing& s : stage.sent) {
    if (!s.cotangent) continue;
    ValueId v = value_named(g, s.name);
    outs.push_back(v);
    cts.push_back(b.op("Recv", {v}, {{"peer", int64_t{s.peer}}}));
  }
  std::vector<ValueId> wrt;
  for (const std::string& p : params) wrt.push_back(value_named(g, p));
  for (const StageCrossing& r : stage.received)
    if (r.cotangent) wrt.push_back(value_named(g, r.name));
  const std::vector<ValueId> grads = append_vjp(g, outs, cts, wrt);
  size_t k = 0;
  for (const std::string& p : params) {
    ValueId sum = b.add(b.input(grad_name(p), g.type(wrt[k])), grads[k]);
    ++k;
    set_name(g, sum, TrainingGraph::next(grad_name(p)));
    b.output(sum);
  }
  for (const StageCrossing& r : stage.received)
    if (r.cotangent) b.output(b.op("Send", {grads[k++]}, {{"peer", int64_t{r.peer}}}));
  return g;
}

// The optimizer's update from the gradients summed over the micro-batches; the last stage's
// mean loss broadcast, so every rank reports it.
Graph update_graph(const StageGraph& stage, const OptimizerConfig& optimizer,
                   const PipelineTraining& pp, const std::vector<std::string>& params) {
  Graph g;
  g.name = stage.graph.name + "_update";
  GraphBuilder b(g);
  b.set_loc("optimizer");
  OptimizerValues v;
  for (const std::string& p : params) {
    const TensorType& t = stage.graph.type(value_named(stage.graph, p));
    v.params.push_back(b.input(p, t));
    ValueId sum = b.input(grad_name(p), t);
    v.grads.push_back(b.mul(sum, b.full_like(sum, 1.0 / pp.micro_batches)));
  }
  v.step = b.input(TrainingGraph::kStep, {DType::kF32, {}});
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<ValueId> state;
    for (const std::string& k : optimizer_state_names(optimizer))
      state.push_back(b.input("optimizer." + k + "." + params[i], g.type(v.params[i])));
    v.state.push_back(state);
  }
  // A stage's replicas average their gradients (and the reported loss) first.
  if (pp.data_parallel > 1) {
    const std::string comm = fmt::format("block:{}", pp.data_parallel);
    all_reduce_mean_in_buckets(b, v.grads, kBucketBytes, comm);
  }
  // Clipping by the global norm: each stage's sum of squares over the parameters it owns (a tied
  // parameter has one owner, which holds its whole gradient: the later stage's part came back
  // as a cotangent), summed over the stages of this replica's pipeline; its replicas hold the
  // same mean gradients, so every rank scales by the same factor.
  if (optimizer.clip_norm > 0 && pp.stages > 1) {
    Attrs sum{{"reduce", std::string("sum")}};
    if (pp.data_parallel > 1) sum["comm"] = fmt::format("stride:{}", pp.data_parallel);
    v.grad_sum_of_squares = b.op("AllReduce", {sum_of_squares(b, v.grads, v.step)}, sum);
  }
  OptimizerUpdate up = append_optimizer(b, optimizer, v);
  // Each replica's last stage holds its loss, every other rank 0: the sum over the job, divided
  // by the replicas, is the batch's mean loss on every rank.
  ValueId loss = b.input(kLossIn, {DType::kF32, {}});
  if (pp.stages * pp.data_parallel > 1)
    loss = b.mul(b.op("AllReduce", {loss}, {{"reduce", std::string("sum")}}),
                 b.scalar(DType::kF32, 1.0 / pp.data_parallel));
  else
    loss = b.add(loss, b.scalar(DType::kF32, 0.0));  // an output must be a node's result
  set_name(g, loss, TrainingGraph::kLoss);
  b.output(loss);
  for (size_t i = 0; i < params.size(); ++i) {
    set_name(g, up.params[i], TrainingGraph::next(params[i]));
    b.output(up.params[i]);
    const std::vector<std::string> kinds = optimizer_state_names(optimizer);
    for (size_t k = 0; k < kinds.size(); ++k) {
      set_name(g, up.state[i][k], TrainingGraph::next("optimizer." + kinds[k] + "." + params[i]));
      b.output(up.state[i][k]);
    }
  }
  return g;
}

std::vector<std::string> owned_params(const StageGraph& stage) {
  std::vector<std::string> names;
  for (ValueId p : stage.graph.params) names.push_back(stage.graph.values[p].name);
  return names;
}

// Stage 0 receives every other stage's parameters and state; the others send theirs (the first
// replica of each: the replicas hold the same values).
Graph gather_graph(const std::vector<StageGraph>& stages, const PipelineTraining& pp,
                   const OptimizerConfig& optimizer) {
  const int32_t me = pp.stage;
  Graph g;
  g.name = fmt::format("pipeline_gather{}", me);
  GraphBuilder b(g);
  const std::vector<std::string> kinds = optimizer_state_names(optimizer);
  for (int32_t s = 1; s < static_cast<int32_t>(stages.size()); ++s) {
    if (me != 0 && me != s) continue;
    const Graph& sg = stages[s].graph;
    for (ValueId p : sg.params) {
      std::vector<std::string> names{sg.values[p].name};
      for (const std::string& k : kinds) names.push_back("optimizer." + k + "." + names[0]);
      for (const std::string& name : names) {
        if (me == 0) {
          ValueId v = b.op("Recv", {zeros(b, sg.type(p))}, {{"peer", int64_t{pp.rank_of(s)}}});
          set_name(g, v, name);
          b.output(v);
        } else {
          b.output(b.op("Send", {b.input(name, sg.type(p))}, {{"peer", int64_t{0}}}));
        }
      }
    }
  }
  return g;
}

}  // namespace

PipelineStep::PipelineStep(std::shared_ptr<Target> target, const Graph& model,
                           const OptimizerConfig& optimizer, const PipelineTraining& pp)
    : target_(std::move(target)), pp_(pp), optimizer_(optimizer) {
  if (pp.stages < 1 || pp.micro_batches < 1 || pp.stage < 0 || pp.stage >= pp.stages)
    throw_user_error(fmt::format(
        "pipeline training: stage {} of {} with {} micro-batches; give 1 or more stages and "
        "micro-batches and a stage below the stage count",
        pp.stage, pp.stages, pp.micro_batches));
  if (optimizer.data_parallel > 1)
    throw_internal_error(
        "pipeline training: give the replicas of each stage as PipelineTraining::data_parallel");
  if (pp.data_parallel < 1 || pp.replica < 0 || pp.replica >= pp.data_parallel)
    throw_user_error(fmt::format("pipeline training: replica {} of {}", pp.replica,
                                 pp.data_parallel));
  all_stages_ = split_for_pipeline(model, pp.stages);
  stage_ = all_stages_[pp.stage];
  // Stages become the world ranks of this replica's pipeline.
  for (auto* crossings : {&stage_.received, &stage_.sent})
    for (StageCrossing& c : *crossings) c.peer = pp.rank_of(c.peer);
  param_names_ = owned_params(stage_);
  for (ValueId in : stage_.graph.inputs) {
    const std::string& name = stage_.graph.values[in].name;
    const bool received = std::any_of(stage_.received.begin(), stage_.received.end(),
                                      [&](const StageCrossing& r) { return r.name == name; });
    if (!received) data_inputs_.push_back(name);
  }
  for (const std::string& p : param_names_) {
    const TensorType& t = stage_.graph.type(value_named(stage_.graph, p));
    auto w = stage_.graph.weights.find(p);
    if (w == stage_.graph.weights.end())
      throw_user_error(fmt::format("training: parameter %{} has no initial value", p));
    params_[p] = w->second.clone();
    grads_[p] = Tensor(t.dtype, static_dims(t.shape));
    for (const std::string& k : optimizer_state_names(optimizer_)) {
      state_names_.push_back("optimizer." + k + "." + p);
      state_[state_names_.back()] = Tensor(t.dtype, static_dims(t.shape));
    }
  }
  Session session(target_);
  auto compile = [&](Program& p, const Graph& g) {
    p.compiled = session.compile(g);
    p.present = true;
  };
  if (!stage_.received.empty()) compile(receive_, receive_graph(stage_));
  if (!stage_.has_loss) compile(forward_, forward_graph(stage_));
  compile(backward_, backward_graph(stage_, param_names_));
  compile(update_, update_graph(stage_, optimizer_, pp_, param_names_));
  if (pp.stages > 1 && pp.replica == 0) compile(gather_, gather_graph(all_stages_, pp, optimizer_));
}

NamedTensors PipelineStep::micro_batch(const NamedTensors& batch, int32_t i) const {
  NamedTensors out;
  for (const std::string& name : data_inputs_) {
    auto it = batch.find(name);
    if (it == batch.end())
      throw_user_error(fmt::format("pipeline training: the batch has no input '{}'", name));
    const Tensor& t = it->second;
    const TensorType& want = stage_.graph.type(value_named(stage_.graph, name));
    std::vector<int64_t> shape = static_dims(want.shape);
    if (t.rank() < 1 || shape.empty() || t.shape()[0] != shape[0] * pp_.micro_batches)
      throw_user_error(fmt::format(
          "pipeline training: input '{}' is {}{}; with {} micro-batches of {} it must have {} "
          "rows",
          name, dtype_name(t.dtype()), t.shape_str(), pp_.micro_batches,
          shape.empty() ? 0 : shape[0], shape.empty() ? 0 : shape[0] * pp_.micro_batches));
    const size_t bytes = t.nbytes() / static_cast<size_t>(pp_.micro_batches);
    auto owner = std::make_shared<Tensor>(t);
    out[name] =
        Tensor::view(t.dtype(), shape,
                     static_cast<char*>(owner->data()) + static_cast<size_t>(i) * bytes, owner);
  }
  return out;
}

void PipelineStep::forward(const NamedTensors& batch, int32_t i) {
  stash_.push_back(receive_.present ? receive_.compiled.run({}) : NamedTensors{});
  if (!forward_.present) return;  // the last stage computes its forward in the backward program
  NamedTensors in = micro_batch(batch, i);
  in.insert(stash_.back().begin(), stash_.back().end());
  in.insert(params_.begin(), params_.end());
  forward_.compiled.run(in, scratch_);
}

void PipelineStep::backward(const NamedTensors& batch, int32_t i) {
  NamedTensors in = micro_batch(batch, i);
  in.insert(stash_.front().begin(), stash_.front().end());
  in.insert(params_.begin(), params_.end());
  for (const auto& [p, g] : grads_) in[grad_name(p)] = g;
  NamedTensors out;
  backward_.compiled.run(in, out);
  for (auto& [p, g] : grads_) g = std::move(out.at(TrainingGraph::next(grad_name(p))));
  if (stage_.has_loss)
    loss_sum_ += out.at(stage_.graph.values[stage_.graph.outputs[0]].name).scalar_at(0);
  stash_.pop_front();
}

double PipelineStep::step(const NamedTensors& batch, int64_t step) {
  loss_sum_ = 0;
  stash_.clear();
  for (auto& [p, g] : grads_) std::memset(g.data(), 0, g.nbytes());
  // 1F1B: stage s runs stages - s - 1 forwards ahead, then alternates one forward and one
  // backward, then drains; at most stages - s micro-batches are in flight on it.
  const int32_t m = pp_.micro_batches;
  const int32_t ahead = std::min(pp_.stages - pp_.stage - 1, m);
  for (int32_t i = 0; i < ahead; ++i) forward(batch, i);
  for (int32_t j = 0; j < m - ahead; ++j) {
    forward(batch, ahead + j);
    backward(batch, j);
  }
  for (int32_t j = m - ahead; j < m; ++j) backward(batch, j);

  NamedTensors in = params_;
  in.insert(state_.begin(), state_.end());
  for (const auto& [p, g] : grads_) in[grad_name(p)] = g;
  in[TrainingGraph::kStep] = Tensor::from<float>(DType::kF32, {}, {static_cast<float>(step)});
  in[kLossIn] = Tensor::from<float>(DType::kF32, {}, {static_cast<float>(loss_sum_ / m)});
  NamedTensors out;
  update_.compiled.run(in, out);
  for (auto* set : {&params_, &state_})
    for (auto& [k, t] : *set) t = std::move(out.at(TrainingGraph::next(k)));
  return out.at(TrainingGraph::kLoss).scalar_at(0);
}

std::map<std::string, TensorType> PipelineStep::model_params() const {
  std::map<std::string, TensorType> out;
  for (const StageGraph& s : all_stages_)
    for (ValueId p : s.graph.params) out.emplace(s.graph.values[p].name, s.graph.type(p));
  return out;
}

void PipelineStep::restore(NamedTensors params, NamedTensors state) {
  params_ = std::move(params), state_ = std::move(state);
  gathered_.clear();
}

void PipelineStep::gather_to_first_stage() {
  if (!gather_.present) return;
  NamedTensors in = params_;
  in.insert(state_.begin(), state_.end());
  NamedTensors out = gather_.compiled.run(pp_.stage == 0 ? NamedTensors{} : in);
  if (pp_.stage == 0) gathered_ = std::move(out);
}

int64_t PipelineStep::arena_bytes() const {
  int64_t most = backward_.compiled.lir_for({}).arena_bytes;
  if (forward_.present) most = std::max(most, forward_.compiled.lir_for({}).arena_bytes);
  return most;
}

}  // namespace rlx::train
