// Cutting a training model into pipeline stages (rlx/core/pipeline_training.h).
//
// Only the nodes that depend on a parameter are divided among the stages: those are what the
// backward pass runs through, and their values are what must cross. Everything else (masks,
// positions, RoPE tables, label reshapes) depends on the batch alone, which every rank holds, so
// each stage recomputes what it uses: cheaper than sending it, and no cotangent flows there.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "rlx/core/pipeline_training.h"

namespace rlx {

namespace {

bool carries_cotangent(const TensorType& t) {
  return is_float(t.dtype) || is_complex(t.dtype);
}

int64_t numel_of(const TensorType& t) {
  int64_t n = 1;
  for (const Dim& d : t.shape) n *= d.is_static() ? d.value : 1;
  return n;
}

// Work a node adds where it first reads a parameter: a product's grows with the weight; a
// lookup reads one row per token, however large its table.
int64_t first_read_cost(const Graph& g, const Node& n, ValueId param) {
  if (n.op == "Embedding" || n.op == "gather") return numel_of(g.type(n.outputs[0]));
  return numel_of(g.type(param));
}

Graph loss_only(const Graph& model) {
  if (model.outputs.empty())
    throw_user_error(
        "pipeline training: the model has no output; its first output must be the loss");
  Graph g = model;
  g.outputs = {model.outputs[0]};
  eliminate_dead_code(g);
  const TensorType& loss = g.type(g.outputs[0]);
  if (loss.rank() != 0 || !is_float(loss.dtype))
    throw_user_error(fmt::format("pipeline training: the loss %{} is {}; it must be a float scalar",
                                 g.values[g.outputs[0]].name, loss.str()));
  for (const Value& v : g.values)
    if (!is_static(v.type.shape))
      throw_user_error(fmt::format(
          "pipeline training: %{} is {}; bind every dim (the micro-batch's shapes) first", v.name,
          v.type.str()));
  return g;
}

// Which stage computes each parameter-dependent value (-1: none, the value is recomputed where
// used), parameters belonging to the stage of their first reader.
struct Assignment {
  std::vector<int32_t> node_stage;   // per node; -1 for parameter-free nodes
  std::vector<int32_t> value_stage;  // per value
};

Assignment assign_stages(const Graph& g, int32_t stages) {
  const auto n_nodes = static_cast<int32_t>(g.nodes.size());
  std::vector<bool> dep(g.values.size(), false);
  for (ValueId p : g.params) dep[p] = true;
  std::vector<int32_t> first_reader(g.values.size(), -1);
  std::vector<int64_t> cost(n_nodes, 0);
  std::vector<bool> param_node(n_nodes, false);
  int64_t total = 0;
  for (int32_t i = 0; i < n_nodes; ++i) {
    const Node& n = g.nodes[i];
    for (ValueId in : n.inputs) {
      param_node[i] = param_node[i] || dep[in];
      if (dep[in] && g.values[in].producer < 0 && first_reader[in] < 0) {
        first_reader[in] = i;
        cost[i] += first_read_cost(g, n, in);
      }
    }
    total += cost[i];
    if (param_node[i])
      for (ValueId out : n.outputs) dep[out] = true;
  }
  // Stage s starts at the first node that reads a new parameter once the stages before hold
  // s / stages of the work.
  std::vector<int32_t> starts{0};
  int64_t before = 0;
  for (int32_t i = 0; i < n_nodes && static_cast<int32_t>(starts.size()) < stages; ++i) {
    const auto s = static_cast<int64_t>(starts.size());
    if (cost[i] > 0 && before > 0 && before * stages >= s * total) starts.push_back(i);
    before += cost[i];
  }
  if (static_cast<int32_t>(starts.size()) < stages) {
    int32_t places = 0;
    for (int32_t i = 0; i < n_nodes; ++i) places += cost[i] > 0;
    throw_user_error(fmt::format(
        "pipeline training: the model cannot be cut into {} stages: its parameters are first read "
        "by {} nodes, so it has {} place(s) to cut{}; use --pp {} or fewer",
        stages, places, std::max(places - 1, 0),
        places >= stages ? " but the parameters are too unevenly spread for an even cut" : "",
        std::max<int32_t>(1, std::min(places, stages - 1))));
  }
  Assignment a;
  a.node_stage.assign(n_nodes, -1);
  a.value_stage.assign(g.values.size(), -1);
  int32_t stage = 0;
  for (int32_t i = 0; i < n_nodes; ++i) {
    while (stage + 1 < stages && i >= starts[stage + 1]) ++stage;
    if (!param_node[i]) continue;
    a.node_stage[i] = stage;
    for (ValueId out : g.nodes[i].outputs) a.value_stage[out] = stage;
  }
  // A parameter the loss does not read stays with stage 0, where its gradient is zero.
  for (ValueId p : g.params)
    a.value_stage[p] = first_reader[p] >= 0 ? a.node_stage[first_reader[p]] : 0;
  const int32_t loss_stage = a.value_stage[g.outputs[0]];
  if (loss_stage != stages - 1)
    throw_user_error(fmt::format(
        "pipeline training: the loss %{} would be computed by stage {} of {}: nodes that read no "
        "new parameter follow it; the model cannot be cut into {} stages",
        g.values[g.outputs[0]].name, loss_stage, stages, stages));
  return a;
}

// The nodes stage s runs: its own, and the parameter-free nodes they need, in graph order.
std::vector<bool> nodes_of_stage(const Graph& g, const Assignment& a, int32_t s) {
  std::vector<bool> keep(g.nodes.size(), false);
  std::vector<int32_t> work;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (a.node_stage[i] == s) keep[i] = true, work.push_back(static_cast<int32_t>(i));
  while (!work.empty()) {
    const Node& n = g.nodes[work.back()];
    work.pop_back();
    for (ValueId in : n.inputs) {
      const int32_t p = g.values[in].producer;
      if (p >= 0 && a.node_stage[p] < 0 && !keep[p]) keep[p] = true, work.push_back(p);
    }
  }
  return keep;
}

StageGraph build_stage(const Graph& g, const Assignment& a, int32_t s, int32_t stages) {
  const std::vector<bool> keep = nodes_of_stage(g, a, s);
  std::set<ValueId> read, received;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i])
      for (ValueId in : g.nodes[i].inputs) {
        read.insert(in);
        if (a.value_stage[in] >= 0 && a.value_stage[in] != s) received.insert(in);
      }
  StageGraph out;
  Graph& sg = out.graph;
  sg.name = fmt::format("{}_stage{}", g.name, s);
  for (const Value& v : g.values) sg.reserve_name(v.name);
  std::vector<ValueId> map(g.values.size(), kNoValue);
  for (ValueId in : g.inputs)
    if (read.count(in)) map[in] = sg.add_input(g.values[in].name, g.type(in));
  for (ValueId v : received) {
    map[v] = sg.add_input(g.values[v].name, g.type(v));
    out.received.push_back({g.values[v].name, a.value_stage[v], carries_cotangent(g.type(v))});
  }
  for (ValueId p : g.params)
    if (a.value_stage[p] == s) {
      const std::string& name = g.values[p].name;
      auto w = g.weights.find(name);
      map[p] = sg.add_param(name, g.type(p), w == g.weights.end() ? Tensor() : w->second);
    }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    const Node& n = g.nodes[i];
    std::vector<ValueId> ins;
    for (ValueId in : n.inputs) {
      if (map[in] == kNoValue)
        throw_internal_error(
            fmt::format("pipeline stage {}: %{} has no source", s, g.values[in].name));
      ins.push_back(map[in]);
    }
    std::vector<TensorType> types;
    for (ValueId o : n.outputs) types.push_back(g.type(o));
    const int32_t k = sg.add_node(n.op, ins, types, n.attrs, n.loc);
    sg.nodes[k].regions = n.regions;
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      map[n.outputs[j]] = sg.nodes[k].outputs[j];
      sg.values[map[n.outputs[j]]].name = g.values[n.outputs[j]].name;
    }
  }
  if (s == stages - 1) {
    sg.outputs.push_back(map[g.outputs[0]]);
    out.has_loss = true;
  }
  // What later stages read of this stage's values, each value once among the outputs.
  std::vector<std::set<int32_t>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (ValueId in : g.nodes[i].inputs) {
      const int32_t at = a.node_stage[i];
      if (at >= 0 && a.value_stage[in] == s && at != s) readers[in].insert(at);
    }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (readers[v].empty()) continue;
    sg.outputs.push_back(map[v]);
    for (int32_t to : readers[v])
      out.sent.push_back(
          {g.values[v].name, to, carries_cotangent(g.type(static_cast<ValueId>(v)))});
  }
  return out;
}

}  // namespace

std::vector<StageGraph> split_for_pipeline(const Graph& model, int32_t stages) {
  if (stages < 1)
    throw_user_error(fmt::format("pipeline training: {} stages; give 1 or more", stages));
  const Graph g = loss_only(model);
  if (g.params.empty())
    throw_user_error("pipeline training: the model has no parameters (Graph::params) to train");
  const Assignment a = assign_stages(g, stages);
  std::vector<StageGraph> out;
  for (int32_t s = 0; s < stages; ++s) out.push_back(build_stage(g, a, s, stages));
  return out;
}

}  // namespace rlx
