#include "rlx/core/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "in_place.h"
#include "rlx/core/error.h"
#include "rlx/core/host_memory.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"
#include "value_sizes.h"

namespace rlx {

namespace {

// Where a compiled specialisation takes each input and output: a slot of the binding table it
// runs on (an LIR buffer id, or for MIR-level targets the graph's inputs then its outputs).
struct IoLayout {
  size_t slots = 0;
  std::map<std::string, int32_t> inputs;
  struct Output {
    std::string name;
    int32_t slot;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Output> outputs;
  std::vector<std::pair<int32_t, const void*>> constants;  // LIR constants the caller passes in
};

IoLayout layout_of(const lir::Program& p) {
  IoLayout io;
  io.slots = p.buffers.size();
  for (auto& [name, b] : p.inputs) io.inputs[name] = b;
  for (auto& [name, b] : p.outputs)
    io.outputs.push_back({name, b, p.buffers[b].dtype, p.buffers[b].shape});
  for (const auto& buf : p.buffers)
    if (buf.kind == lir::BufferKind::kConstant) io.constants.emplace_back(buf.id, buf.data.data());
  return io;
}

IoLayout layout_of(const Graph& g, const std::vector<std::string>& output_names) {
  IoLayout io;
  io.slots = g.inputs.size() + g.outputs.size();
  for (size_t i = 0; i < g.inputs.size(); ++i)
    io.inputs[g.values[g.inputs[i]].name] = static_cast<int32_t>(i);
  for (size_t j = 0; j < g.outputs.size(); ++j) {
    const TensorType& t = g.type(g.outputs[j]);
    std::vector<int64_t> shape;
    for (const Dim& d : t.shape) {
      if (!d.is_static())
        throw_internal_error(fmt::format("output {} is not static after specialisation", t.str()));
      shape.push_back(d.value);
    }
    io.outputs.push_back(
        {output_names.at(j), static_cast<int32_t>(g.inputs.size() + j), t.dtype, std::move(shape)});
  }
  return io;
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = static_cast<const char*>(a.data());
  const char* pb = static_cast<const char*>(b.data());
  return pa && pb && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

bool same_buffer(const DeviceTensor& a, const DeviceTensor& b) {
  return a.defined() && b.defined() && a.buffer().handle == b.buffer().handle;
}

}  // namespace

struct CompiledModel::State {
  std::shared_ptr<Target> target;
  DispatchReport report;
  Graph mir;
  std::vector<std::string> input_names, output_names;
  InputLimits limits;
  struct Specialization {
    lir::Program program;  // empty for MIR-level targets
    std::unique_ptr<Executable> exe;
    IoLayout io;
    bool host_only_run = false;           // run(std::vector<void*>) takes the whole table
    std::map<int32_t, int32_t> in_place;  // output slot -> input slot it may share (in_place.h)
  };
  std::map<Bindings, Specialization> cache;

  Specialization& specialization(const Bindings& b) {
    auto it = cache.find(b);
    if (it != cache.end()) return it->second;
    Specialization s;
    if (target->program_level() == ProgramLevel::kMir) {
      Graph g = specialized(b);
      s.io = layout_of(g, output_names);
      s.exe = target->compile_mir(g);
    } else {
      s.program = lower(b);
      s.io = layout_of(s.program);
      s.in_place = in_place_updates(s.program);
      s.exe = target->compile(s.program);
      s.host_only_run = true;
    }
    return cache.emplace(b, std::move(s)).first->second;
  }

  Graph specialized(const Bindings& b) const {
    Graph g = specialize(mir, b);
    check_value_sizes(g, b);  // before passes or lowering compute with the sizes
    run_default_passes(g);
    schedule_collectives_early(g);
    return g;
  }

  lir::Program lower(const Bindings& b) const {
    // Kernels are cut to what the device binds (webgpu: storage buffers per shader stage).
    LoweringOptions options;
    if (std::shared_ptr<Device> d = target->device())
      options.max_buffers_per_kernel = d->limits().max_buffers_per_kernel;
    lir::Program p = lower_to_lir(specialized(b), options);
    for (size_t i = 0; i < p.outputs.size(); ++i) p.outputs[i].first = output_names.at(i);
    return p;
  }

  // Checks every input against the graph (dtype, rank and static dims of what `given` says the
  // caller passed under its name) and binds the symbolic dims.
  Bindings bind(const std::function<std::optional<std::pair<DType, std::vector<int64_t>>>(
                    const std::string&)>& given) const {
    Bindings bindings;
    const Graph& g = mir;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const std::string& name = input_names[i];
      auto got = given(name);
      if (!got) throw_user_error(fmt::format("input '{}' is missing", name));
      auto& [dtype, shape] = *got;
      const TensorType& want = g.type(g.inputs[i]);
      std::string shape_str = fmt::format("[{}]", fmt::join(shape, ","));
      if (dtype != want.dtype || static_cast<int64_t>(shape.size()) != want.rank())
        throw_user_error(fmt::format("input '{}' is {}{}, the model expects {}", name,
                                     dtype_name(dtype), shape_str, want.str()));
      for (size_t d = 0; d < shape.size(); ++d) {
        const Dim& dim = want.shape[d];
        int64_t n = shape[d];
        if (dim.is_static() && dim.value != n)
          throw_user_error(
              fmt::format("input '{}' has size {} in dim {}, the model expects {} ({})", name, n, d,
                          dim.value, want.str()));
        if (!dim.is_static()) {
          auto [b, fresh] = bindings.emplace(dim.sym, n);
          if (!fresh && b->second != n)
            throw_user_error(
                fmt::format("input '{}' gives {} = {}, but an earlier input gave {} = {}", name,
                            dim.sym, n, dim.sym, b->second));
        }
      }
    }
    return bindings;
  }

  void check_names(const std::vector<std::string>& given) const {
    for (const std::string& name : given)
      if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
        std::string expected;
        for (auto& n : input_names) expected += (expected.empty() ? "" : ", ") + n;
        throw_user_error(
            fmt::format("unknown input '{}': the model's inputs are {}", name, expected));
      }
  }
};

Session::Session(std::shared_ptr<Target> target) : target_(std::move(target)) {
  if (!target_) throw_user_error("Session needs a target");
}

CompiledModel Session::compile(const Model& model, const std::string& name) {
  return compile(model.graph(name), input_limits(model));
}

CompiledModel Session::compile(const Graph& graph, InputLimits limits) {
  verify_graph(graph);
  for (ValueId p : graph.params)
    if (!graph.weights.count(graph.values[p].name))
      throw_user_error(
          fmt::format("param %{} has no weight data: load the model with its weights file",
                      graph.values[p].name));
  auto st = std::make_shared<CompiledModel::State>();
  st->target = target_;
  st->limits = std::move(limits);
  DispatchResult d = dispatch(graph, *target_);
  st->report = std::move(d.report);
  st->mir = std::move(d.graph);
  run_default_passes(st->mir);
  for (ValueId v : graph.inputs) st->input_names.push_back(graph.values[v].name);
  for (ValueId v : graph.outputs) st->output_names.push_back(graph.values[v].name);
  CompiledModel m;
  m.state_ = std::move(st);
  return m;
}

const DispatchReport& CompiledModel::report() const {
  return state_->report;
}
const Graph& CompiledModel::mir() const {
  return state_->mir;
}
lir::Program CompiledModel::lir_for(const Bindings& b) const {
  return state_->lower(b);
}
Graph CompiledModel::mir_for(const Bindings& b) const {
  return state_->specialized(b);
}
std::shared_ptr<Device> CompiledModel::device() const {
  return state_->target->device();
}

NamedTensors CompiledModel::run(const NamedTensors& inputs) {
  NamedTensors out;
  run(inputs, out);
  return out;
}

void CompiledModel::run(const NamedTensors& inputs, NamedTensors& outputs) {
  NamedDeviceTensors none_in, none_out;
  run(inputs, none_in, outputs, none_out);
}

void CompiledModel::run(const NamedTensors& inputs, const NamedDeviceTensors& device_inputs,
                        NamedTensors& outputs, NamedDeviceTensors& device_outputs) {
  State& st = *state_;
  std::vector<std::string> given;
  for (auto& [name, t] : inputs) given.push_back(name);
  for (auto& [name, t] : device_inputs) {
    if (inputs.count(name))
      throw_user_error(fmt::format("input '{}' is given both on the host and on the device", name));
    given.push_back(name);
  }
  st.check_names(given);
  Bindings bindings = st.bind(
      [&](const std::string& name) -> std::optional<std::pair<DType, std::vector<int64_t>>> {
        if (auto it = inputs.find(name); it != inputs.end())
          return std::make_pair(it->second.dtype(), it->second.shape());
        if (auto it = device_inputs.find(name); it != device_inputs.end() && it->second.defined())
          return std::make_pair(it->second.dtype(), it->second.shape());
        return std::nullopt;
      });
  // Before anything runs, so no kernel indexes a table with a bad id (device inputs are the
  // caller's own outputs, such as KV caches, and stay unread).
  check_input_limits(st.limits, inputs);

  std::shared_ptr<Device> device;
  if (!device_inputs.empty() || !device_outputs.empty()) {
    device = st.target->device();
    if (!device)
      throw_unsupported(fmt::format(
          "target {} has no device memory of its own, so it keeps no tensor on a device; "
          "pass host tensors",
          st.target->name()));
    for (auto& [name, t] : device_inputs)
      if (t.device() != device.get())
        throw_user_error(fmt::format("device input '{}' lives on another device than target {}'s",
                                     name, st.target->name()));
  }
  auto& spec = st.specialization(bindings);
  const IoLayout& io = spec.io;
  // A buffer the host can address directly (host-memory targets) is passed as host memory.
  auto bind_device = [&](const DeviceTensor& t) {
    BufferBinding b;
    if (void* p = device->host_address(t.buffer()))
      b.host = p;
    else
      b.device = t.buffer();
    return b;
  };
  std::vector<BufferBinding> slots(io.slots);
  for (auto [slot, data] : io.constants) slots[slot].host = const_cast<void*>(data);
  for (auto& [name, slot] : io.inputs) {
    if (auto it = inputs.find(name); it != inputs.end())
      slots[slot].host = const_cast<void*>(it->second.data());
    else
      slots[slot] = bind_device(device_inputs.at(name));
  }
  std::vector<const Tensor*> bound;            // host outputs given memory so far
  std::vector<const DeviceTensor*> bound_dev;  // device outputs given memory so far
  // Whether output `o` may be the very memory of input `name`: the program updates it in place.
  auto partner = [&](const IoLayout::Output& o, const std::string& name) {
    auto it = spec.in_place.find(o.slot);
    return it != spec.in_place.end() && io.inputs.at(name) == it->second;
  };
  for (const IoLayout::Output& o : io.outputs) {
    if (auto dit = device_outputs.find(o.name); dit != device_outputs.end()) {
      DeviceTensor& t = dit->second;
      bool reuse =
          t.defined() && t.device() == device.get() && t.dtype() == o.dtype && t.shape() == o.shape;
      // Kernels read inputs while they write outputs, so an output may not share their memory
      // (unless it is the input the program updates in place), nor may two outputs share memory.
      for (auto in = device_inputs.begin(); reuse && in != device_inputs.end(); ++in)
        reuse = !same_buffer(t, in->second) || partner(o, in->first);
      for (const DeviceTensor* other : bound_dev) reuse = reuse && !same_buffer(t, *other);
      if (!reuse) t = DeviceTensor(device, o.dtype, o.shape);
      slots[o.slot] = bind_device(t);
      bound_dev.push_back(&t);
      continue;
    }
    auto it = outputs.find(o.name);
    // A graph that returns one value twice has two outputs of one name: both are that tensor
    // (replacing it here would free the memory the first slot was just given).
    if (it != outputs.end() && std::find(bound.begin(), bound.end(), &it->second) != bound.end()) {
      slots[o.slot].host = it->second.data();
      continue;
    }
    bool reuse = it != outputs.end() && it->second.dtype() == o.dtype &&
                 it->second.shape() == o.shape && it->second.defined();
    for (auto in = inputs.begin(); reuse && in != inputs.end(); ++in)
      reuse = !overlaps(it->second, in->second) ||
              (partner(o, in->first) && it->second.data() == in->second.data() &&
               it->second.nbytes() == in->second.nbytes());
    for (const Tensor* other : bound) reuse = reuse && !overlaps(it->second, *other);
    if (!reuse) outputs[o.name] = output_tensor(st.target, o.dtype, o.shape);
    const Tensor& t = outputs[o.name];
    slots[o.slot].host = const_cast<void*>(t.data());
    bound.push_back(&t);
  }
  bool all_host = std::all_of(slots.begin(), slots.end(),
                              [](const BufferBinding& b) { return !b.device.valid(); });
  if (all_host && spec.host_only_run) {
    std::vector<void*> ptrs(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) ptrs[i] = slots[i].host;
    spec.exe->run(ptrs);
  } else {
    spec.exe->run_bound(slots, 0);
  }
}

}  // namespace rlx
