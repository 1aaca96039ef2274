#include "tpu_executable.h"

#include <fmt/format.h>

#include "rlx/core/shape.h"

namespace rlx::tpu {

namespace {

// A binding of a static-shaped value: its dims and byte count (rlx/core/shape.h's helpers).
std::vector<int64_t> static_shape(const TensorType& t) { return static_dims(t.shape); }

size_t bytes_of(DType d, const std::vector<int64_t>& shape) {
  return dtype_size(d) * static_cast<size_t>(num_elements(shape));
}

}  // namespace

TpuExecutable::TpuExecutable(std::shared_ptr<PjrtClient> client, WeightCache& weights,
                             const Graph& g)
    : client_(std::move(client)), module_(emit_stablehlo(g)) {
  exe_ = client_->compile(module_.text, module_.num_results());
  for (ValueId p : module_.params) {
    const std::string& name = g.values[p].name;
    auto w = g.weights.find(name);
    if (w == g.weights.end())
      throw_user_error(
          fmt::format("tpu: the weight '{}' has no data; load the model's weights", name));
    weights_.push_back(weights.get(client_, w->second));
  }
  for (ValueId v : g.inputs) {
    const TensorType& t = g.type(v);
    inputs_.push_back({t.dtype, static_shape(t), bytes_of(t.dtype, static_shape(t))});
  }
  for (ValueId v : g.outputs) {
    const TensorType& t = g.type(v);
    outputs_.push_back({t.dtype, static_shape(t), bytes_of(t.dtype, static_shape(t))});
  }
}

void TpuExecutable::run(const std::vector<void*>& buffers) {
  std::vector<BufferBinding> b(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) b[i].host = buffers[i];
  run_bound(b, 0);
}

void TpuExecutable::run_bound(const std::vector<BufferBinding>& buffers, QueueId) {
  if (buffers.size() != inputs_.size() + outputs_.size())
    throw_internal_error(fmt::format("tpu: {} bindings for {} inputs and {} outputs",
                                     buffers.size(), inputs_.size(), outputs_.size()));
  for (const BufferBinding& b : buffers)
    if (!b.host)
      throw_internal_error("tpu: a binding is not host memory; the tpu target has no rlx device");
  std::vector<PjrtBuffer> inputs;
  std::vector<pjrt::Buffer*> args;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    inputs.push_back(client_->upload(buffers[i].host, inputs_[i].dtype, inputs_[i].shape));
    args.push_back(inputs.back().get());
  }
  for (const auto& w : weights_) args.push_back(w->device.get());
  std::vector<PjrtBuffer> results = exe_->execute(args);
  raise_index_errors(results);
  for (size_t j = 0; j < outputs_.size(); ++j)
    results.at(j).download(buffers[inputs_.size() + j].host, outputs_[j].bytes);
}

// The program computed, per gather/scatter, the first index outside [-len, len) and its value
// (stablehlo_emitter.h); rlx reports it as the cpu target does.
void TpuExecutable::raise_index_errors(const std::vector<PjrtBuffer>& results) const {
  for (size_t c = 0; c < module_.checks.size(); ++c) {
    const IndexCheck& check = module_.checks[c];
    int64_t position = 0, value = 0;
    results.at(module_.num_outputs + 2 * c).download(&position, sizeof position);
    if (position >= check.count) continue;
    results.at(module_.num_outputs + 2 * c + 1).download(&value, sizeof value);
    throw_index_error(check.op, value, position, check.axis_size);
  }
}

}  // namespace rlx::tpu
