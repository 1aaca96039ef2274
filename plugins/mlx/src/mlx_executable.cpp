#include "mlx_executable.h"

#include <fmt/format.h>
#include <mlx/compile.h>
#include <mlx/ops.h>
#include <mlx/transforms.h>

#include <mutex>

#include "mlx_dtypes.h"
#include "rlx/core/error.h"
#include "rlx/core/shape.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

namespace {

// MLX builds graphs in process-wide state (the compile cache, the default stream); runs from
// several threads take turns.
std::mutex& mlx_mutex() {
  static std::mutex m;
  return m;
}

// A binding of a static-shaped value: its dims and byte count (rlx/core/shape.h's helpers).
std::vector<int64_t> static_shape(const TensorType& t) { return static_dims(t.shape); }

size_t bytes_of(DType d, const std::vector<int64_t>& shape) {
  return dtype_size(d) * static_cast<size_t>(num_elements(shape));
}

}  // namespace

MlxExecutable::MlxExecutable(WeightCache& weights, const Graph& g)
    : graph_(std::make_shared<const Graph>(g)), checks_(index_checks(g)) {
  std::lock_guard lock(mlx_mutex());
  for (ValueId p : g.params) {
    const std::string& name = g.values[p].name;
    auto w = g.weights.find(name);
    if (w == g.weights.end())
      throw_user_error(
          fmt::format("mlx: the weight '{}' has no data; load the model's weights", name));
    weights_.push_back(weights.get(w->second));
  }
  constants_ = constants(g);
  for (ValueId v : g.inputs) {
    const TensorType& t = g.type(v);
    to_mlx(t.dtype);
    inputs_.push_back({t.dtype, static_shape(t), bytes_of(t.dtype, static_shape(t))});
  }
  for (ValueId v : g.outputs) {
    const TensorType& t = g.type(v);
    to_mlx(t.dtype);
    outputs_.push_back({t.dtype, static_shape(t), bytes_of(t.dtype, static_shape(t))});
  }
  std::shared_ptr<const Graph> graph = graph_;
  auto traced = [graph](const std::vector<mx::array>& args) { return build(*graph, args); };
  // A loop's condition is read on the host while the graph is built, which tracing cannot do.
  if (has_loops(g))
    fn_ = traced;
  else
    fn_ = mx::compile(traced);
}

void MlxExecutable::run(const std::vector<void*>& buffers) {
  std::vector<BufferBinding> b(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) b[i].host = buffers[i];
  run_bound(b, 0);
}

void MlxExecutable::run_bound(const std::vector<BufferBinding>& buffers, QueueId) {
  if (buffers.size() != inputs_.size() + outputs_.size())
    throw_internal_error(fmt::format("mlx: {} bindings for {} inputs and {} outputs",
                                     buffers.size(), inputs_.size(), outputs_.size()));
  for (const BufferBinding& b : buffers)
    if (!b.host)
      throw_internal_error("mlx: a binding is not host memory; the mlx target has no rlx device");
  std::lock_guard lock(mlx_mutex());
  std::vector<mx::array> args;
  for (size_t i = 0; i < inputs_.size(); ++i)
    args.push_back(
        copy_in(buffers[i].host, inputs_[i].bytes, inputs_[i].dtype, mlx_shape(inputs_[i].shape)));
  for (const auto& w : weights_) args.push_back(*w);
  args.insert(args.end(), constants_.begin(), constants_.end());
  std::vector<mx::array> results;
  try {
    results = fn_(args);
    for (size_t j = 0; j < outputs_.size(); ++j) results[j] = mx::contiguous(results[j]);
    mx::eval(results);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::kDevice, fmt::format("mlx: MLX failed to run the graph: {}", e.what()));
  }
  raise_index_errors(results);
  for (size_t j = 0; j < outputs_.size(); ++j)
    copy_out(results[j], buffers[inputs_.size() + j].host, outputs_[j].bytes);
}

void MlxExecutable::raise_index_errors(const std::vector<mx::array>& results) const {
  for (size_t c = 0; c < checks_.size(); ++c) {
    const IndexCheck& check = checks_[c];
    const int64_t position = results.at(outputs_.size() + 2 * c).item<int64_t>();
    if (position >= check.count) continue;
    const int64_t value = results.at(outputs_.size() + 2 * c + 1).item<int64_t>();
    throw_index_error(check.op, value, position, check.axis_size);
  }
}

}  // namespace rlx::mlx_target
