// The training loop's state around one compiled step: parameters, optimizer state, step count.
#include "rlx/core/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "rlx/core/safetensors.h"
#include "train/pipeline_step.h"

namespace rlx {

namespace {

Tensor initial_value(const Graph& model, const std::string& name, const TensorType& type) {
  auto it = model.weights.find(name);
  if (it == model.weights.end())
    throw_user_error(
        fmt::format("training: parameter %{} has no initial value in Graph::weights", name));
  if (!is_static(type.shape))
    throw_user_error(
        fmt::format("training: parameter %{} has a symbolic shape {}", name, type.str()));
  return it->second.clone();
}

// A rank-2 tensor with its dims swapped: between the model's layout of a weight and the one the
// step keeps it in (TrainingGraph::transposed). Bytes are moved, so any dtype goes.
Tensor swap_dims(const Tensor& t) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out(t.dtype(), {cols, rows});
  const size_t size = dtype_size(t.dtype());
  const auto* from = static_cast<const char*>(t.data());
  auto* to = static_cast<char*>(out.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(to + (c * rows + r) * size, from + (r * cols + c) * size, size);
  return out;
}

Tensor step_tensor(int64_t steps) {
  return Tensor::from<float>(DType::kF32, {}, {static_cast<float>(steps)});
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Target> target, const Graph& model, OptimizerConfig optimizer)
    : optimizer_(std::move(optimizer)), graph_(build_training_graph(model, optimizer_)) {
  Session session(std::move(target));
  program_ = session.compile(graph_.graph);
  const Graph& g = graph_.graph;
  for (const std::string& p : graph_.params) {
    const TensorType& t = g.type(*g.find_value(p));
    Tensor v = initial_value(model, p, t);
    params_[p] = graph_.transposed.count(p) ? swap_dims(v) : std::move(v);
  }
  for (const std::string& s : graph_.state) {
    const TensorType& t = g.type(*g.find_value(s));
    state_[s] = Tensor(t.dtype, static_dims(t.shape));
  }
  device_ = program_.device();
  to_device();
}

Trainer::Trainer(std::shared_ptr<Target> target, const Graph& model, OptimizerConfig optimizer,
                 const PipelineTraining& pp)
    : optimizer_(std::move(optimizer)) {
  if (!pp.pipelined()) {
    *this = Trainer(std::move(target), model, optimizer_);
    return;
  }
  pipeline_ = std::make_unique<train::PipelineStep>(std::move(target), model, optimizer_, pp);
  graph_.params = pipeline_->param_names();
  graph_.state = pipeline_->state_names();
  host_stale_ = true;
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

void Trainer::gather_stages() {
  if (!pipeline_) return;
  pipeline_->gather_to_first_stage();
  host_stale_ = true;
}

void Trainer::to_device() {
  if (!device_) return;
  device_params_.clear(), device_state_.clear(), device_outputs_.clear();
  for (const auto& [k, t] : params_) device_params_[k] = DeviceTensor::upload(device_, t);
  for (const auto& [k, t] : state_) device_state_[k] = DeviceTensor::upload(device_, t);
  host_stale_ = false;
}

void Trainer::sync_host() const {
  if (!host_stale_) return;
  if (pipeline_) {
    // References to the stage's tensors (no copies), and what gather_stages() brought.
    params_ = pipeline_->params(), state_ = pipeline_->state();
    for (const auto& [name, t] : pipeline_->gathered())
      (name.rfind("optimizer.", 0) == 0 ? state_ : params_)[name] = t;
    host_stale_ = false;
    return;
  }
  for (auto& [k, t] : params_) device_params_.at(k).download_into(t);
  for (auto& [k, t] : state_) device_state_.at(k).download_into(t);
  host_stale_ = false;
}

const NamedTensors& Trainer::parameters() const {
  sync_host();
  if (graph_.transposed.empty()) return params_;
  shown_params_ = in_model_layout(params_);
  return shown_params_;
}

NamedTensors Trainer::in_model_layout(const NamedTensors& kept) const {
  NamedTensors shown = kept;  // shares the tensors kept as the model has them
  for (auto& [k, t] : shown)
    if (graph_.transposed.count(k)) t = swap_dims(t);
  return shown;
}

double Trainer::step(const NamedTensors& batch) {
  if (pipeline_) {
    const double loss = pipeline_->step(batch, steps_++);
    host_stale_ = true;
    return loss;
  }
  if (device_) {
    // Parameters and state in, their next values out, all on the device; then the next values
    // become current and the old ones' memory receives the next step's results.
    inputs_ = batch;
    inputs_[TrainingGraph::kStep] = step_tensor(steps_);
    NamedDeviceTensors device_inputs = device_params_;
    device_inputs.insert(device_state_.begin(), device_state_.end());
    for (auto* set : {&device_params_, &device_state_})
      for (const auto& [k, t] : *set) device_outputs_.try_emplace(TrainingGraph::next(k));
    program_.run(inputs_, device_inputs, outputs_, device_outputs_);
    for (auto* set : {&device_params_, &device_state_})
      for (auto& [k, t] : *set) std::swap(t, device_outputs_.at(TrainingGraph::next(k)));
    inputs_.clear();
    host_stale_ = true;
    ++steps_;
    return outputs_.at(TrainingGraph::kLoss).scalar_at(0);
  }
  // Rebuilt per step from references (tensors share data): the batch changes every step.
  inputs_ = batch;
  for (const auto& [k, t] : params_) inputs_[k] = t;
  for (const auto& [k, t] : state_) inputs_[k] = t;
  inputs_[TrainingGraph::kStep] = step_tensor(steps_);
  program_.run(inputs_, outputs_);
  // The new values become current; the old ones' memory receives the next step's results.
  for (auto* set : {&params_, &state_})
    for (auto& [k, t] : *set) std::swap(t, outputs_.at(TrainingGraph::next(k)));
  inputs_.clear();
  ++steps_;
  return outputs_.at(TrainingGraph::kLoss).scalar_at(0);
}

void Trainer::save(const std::filesystem::path& file) const {
  sync_host();
  TensorMap all = in_model_layout(params_);
  for (const auto& [k, t] : in_model_layout(state_)) all[k] = t;
  all[TrainingGraph::kStep] = Tensor::from<int64_t>(DType::kI64, {}, {steps_});
  write_safetensors(file, all,
                    {{"optimizer", optimizer_text(optimizer_)}, {"format", "rlx-training-state"}});
}

void Trainer::load(const std::filesystem::path& file) {
  TensorMap all = read_safetensors(file);
  sync_host();
  // What this process trains: a pipeline stage takes its own parameters and state out of the file
  // stage 0 wrote with every stage's. The values are taken into copies of the maps, so a file
  // that fails the checks below leaves the current values as they were.
  NamedTensors params = pipeline_ ? pipeline_->params() : params_;
  NamedTensors state = pipeline_ ? pipeline_->state() : state_;
  auto check = [&](const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                   bool required) {
    auto it = all.find(name);
    if (it == all.end()) {
      if (required)
        throw_user_error(fmt::format(
            "{}: has no tensor '{}', a parameter of the model being trained", file.string(), name));
      return false;
    }
    if (it->second.dtype() != dtype || it->second.shape() != shape)
      throw_user_error(fmt::format("{}: tensor '{}' is {}{} but the model needs {}{}",
                                   file.string(), name, dtype_name(it->second.dtype()),
                                   it->second.shape_str(), dtype_name(dtype),
                                   fmt::format("[{}]", fmt::join(shape, ","))));
    return true;
  };
  // The file holds the model's layout; a tensor the step keeps transposed is checked against
  // the model's shape and taken in transposed.
  auto take = [&](NamedTensors& into, const std::string& name, bool required) {
    const Tensor& cur = into.at(name);
    const bool transposed = graph_.transposed.count(name) > 0;
    std::vector<int64_t> shape = cur.shape();
    if (transposed) std::swap(shape[0], shape[1]);
    if (!check(name, cur.dtype(), shape, required)) return false;
    into[name] = transposed ? swap_dims(all.at(name)) : all.at(name).clone();
    return true;
  };
  // Every rank checks every stage's parameters, so a file that does not match fails on all of
  // them alike instead of on one while the others wait for it at their next collective.
  if (pipeline_)
    for (const auto& [name, type] : pipeline_->model_params())
      check(name, type.dtype, static_dims(type.shape), true);
  for (auto& [k, t] : params) take(params, k, true);
  bool has_state = true;
  for (auto& [k, t] : state) has_state = take(state, k, false) && has_state;
  if (!has_state)
    for (auto& [k, t] : state) t = Tensor(t.dtype(), t.shape());
  auto it = all.find(TrainingGraph::kStep);
  steps_ = has_state && it != all.end() ? static_cast<int64_t>(it->second.scalar_at(0)) : 0;
  if (pipeline_) {
    pipeline_->restore(std::move(params), std::move(state));
    host_stale_ = true;
    return;
  }
  params_ = std::move(params), state_ = std::move(state);
  outputs_.clear();
  to_device();
}

int64_t Trainer::arena_bytes(const NamedTensors& batch) const {
  if (pipeline_) return pipeline_->arena_bytes();
  Bindings bindings;
  const Graph& g = graph_.graph;
  for (ValueId v : g.inputs) {
    auto it = batch.find(g.values[v].name);
    if (it == batch.end()) continue;
    const Shape& s = g.type(v).shape;
    for (size_t d = 0; d < s.size() && d < it->second.shape().size(); ++d)
      if (!s[d].is_static()) bindings[s[d].sym] = it->second.shape()[d];
  }
  return program_.lir_for(bindings).arena_bytes;
}

int64_t Trainer::kept_bytes() const {
  sync_host();
  int64_t n = 0;
  for (auto* set : {&params_, &state_})
    for (const auto& [k, t] : *set) n += static_cast<int64_t>(t.nbytes());
  return 2 * n;
}

}  // namespace rlx
