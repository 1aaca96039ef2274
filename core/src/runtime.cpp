#include "rlx/core/runtime.h"

#include <fmt/format.h>

#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {

struct CompiledModel::State {
  std::shared_ptr<Target> target;
  DispatchReport report;
  Graph mir;
  std::vector<std::string> input_names, output_names;
  struct Specialization {
    lir::Program program;
    std::unique_ptr<Executable> exe;
  };
  std::map<Bindings, Specialization> cache;

  Specialization& specialization(const Bindings& b) {
    auto it = cache.find(b);
    if (it != cache.end()) return it->second;
    Specialization s;
    s.program = lower(b);
    s.exe = target->compile(s.program);
    return cache.emplace(b, std::move(s)).first->second;
  }

  lir::Program lower(const Bindings& b) const {
    Graph g = specialize(mir, b);
    run_default_passes(g);
    lir::Program p = lower_to_lir(g);
    for (size_t i = 0; i < p.outputs.size(); ++i) p.outputs[i].first = output_names.at(i);
    return p;
  }
};

Session::Session(std::shared_ptr<Target> target) : target_(std::move(target)) {
  if (!target_) throw_user_error("Session needs a target");
}

CompiledModel Session::compile(const Graph& graph) {
  verify_graph(graph);
  for (ValueId p : graph.params)
    if (!graph.weights.count(graph.values[p].name))
      throw_user_error(fmt::format("param %{} has no weight data: load the model with its weights file",
                                   graph.values[p].name));
  auto st = std::make_shared<CompiledModel::State>();
  st->target = target_;
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

const DispatchReport& CompiledModel::report() const { return state_->report; }
const Graph& CompiledModel::mir() const { return state_->mir; }
lir::Program CompiledModel::lir_for(const Bindings& b) const { return state_->lower(b); }

NamedTensors CompiledModel::run(const NamedTensors& inputs) {
  NamedTensors out;
  run(inputs, out);
  return out;
}

namespace {

bool overlaps(const Tensor& a, const Tensor& b) {
  const char* pa = static_cast<const char*>(a.data());
  const char* pb = static_cast<const char*>(b.data());
  return pa && pb && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

}  // namespace

void CompiledModel::run(const NamedTensors& inputs, NamedTensors& outputs) {
  State& st = *state_;
  const Graph& g = st.mir;
  for (auto& [name, t] : inputs)
    if (std::find(st.input_names.begin(), st.input_names.end(), name) == st.input_names.end()) {
      std::string expected;
      for (auto& n : st.input_names) expected += (expected.empty() ? "" : ", ") + n;
      throw_user_error(fmt::format("unknown input '{}': the model's inputs are {}", name, expected));
    }
  Bindings bindings;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const std::string& name = st.input_names[i];
    auto it = inputs.find(name);
    if (it == inputs.end()) throw_user_error(fmt::format("input '{}' is missing", name));
    const TensorType& want = g.type(g.inputs[i]);
    const Tensor& t = it->second;
    if (t.dtype() != want.dtype || t.rank() != want.rank())
      throw_user_error(fmt::format("input '{}' is {}{}, the model expects {}", name,
                                   dtype_name(t.dtype()), t.shape_str(), want.str()));
    for (int64_t d = 0; d < t.rank(); ++d) {
      const Dim& dim = want.shape[d];
      int64_t got = t.shape()[d];
      if (dim.is_static() && dim.value != got)
        throw_user_error(fmt::format("input '{}' has size {} in dim {}, the model expects {} ({})",
                                     name, got, d, dim.value, want.str()));
      if (!dim.is_static()) {
        auto [b, fresh] = bindings.emplace(dim.sym, got);
        if (!fresh && b->second != got)
          throw_user_error(fmt::format("input '{}' gives {} = {}, but an earlier input gave {} = {}",
                                       name, dim.sym, got, dim.sym, b->second));
      }
    }
  }
  auto& spec = st.specialization(bindings);
  const lir::Program& p = spec.program;
  std::vector<void*> ptrs(p.buffers.size(), nullptr);
  for (auto& [name, b] : p.inputs) ptrs[b] = const_cast<void*>(inputs.at(name).data());
  for (const auto& buf : p.buffers)
    if (buf.kind == lir::BufferKind::kConstant) ptrs[buf.id] = const_cast<void*>(buf.data.data());
  std::vector<const Tensor*> bound;  // outputs given memory so far
  for (auto& [name, b] : p.outputs) {
    const lir::Buffer& buf = p.buffers[b];
    auto it = outputs.find(name);
    bool reuse = it != outputs.end() && it->second.dtype() == buf.dtype &&
                 it->second.shape() == buf.shape && it->second.defined();
    // Kernels read inputs while they write outputs, so an output may not share their memory.
    // Nor may two outputs share memory.
    for (auto in = inputs.begin(); reuse && in != inputs.end(); ++in)
      reuse = !overlaps(it->second, in->second);
    for (const Tensor* other : bound) reuse = reuse && !overlaps(it->second, *other);
    if (!reuse) outputs[name] = Tensor(buf.dtype, buf.shape);
    const Tensor& t = outputs[name];
    ptrs[b] = const_cast<void*>(t.data());
    bound.push_back(&t);
  }
  spec.exe->run(ptrs);
}

}  // namespace rlx
