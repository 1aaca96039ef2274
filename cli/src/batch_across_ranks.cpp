#include "batch_across_ranks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "errors.h"
#include "options.h"
#include "rlx/core/error.h"
#include "tensor_rows.h"

namespace rlx::cli {

namespace {

// The inputs cut along the batch: those whose first dim is the first symbolic input's symbol.
std::vector<std::string> batch_inputs(const Graph& g, const NamedTensors& inputs, int64_t* batch) {
  std::optional<std::string> sym;
  for (ValueId v : g.inputs) {
    const Shape& s = g.type(v).shape;
    if (!s.empty() && !s[0].is_static()) {
      sym = s[0].sym;
      break;
    }
  }
  if (!sym)
    throw UsageError(
        "the batch is to be split over ranks or micro-batches, and no input of this "
        "model has a symbolic first (batch) dim",
        "run it with --tp x --pp ranks and without --micro-batches");
  *batch = -1;
  std::vector<std::string> cut;
  for (ValueId v : g.inputs) {
    const Shape& s = g.type(v).shape;
    if (s.empty() || s[0].is_static() || s[0].sym != *sym) continue;
    const std::string& name = g.values[v].name;
    auto it = inputs.find(name);
    if (it == inputs.end() || it->second.shape().empty()) continue;
    if (*batch < 0) *batch = it->second.shape()[0];
    cut.push_back(name);
  }
  return cut;
}

void check_has_rows(const std::string& name, const Tensor& t, int64_t rows) {
  if (t.shape().empty() || t.shape()[0] != rows)
    throw UsageError(fmt::format("output {} ({} for {} rows of the batch) has no batch dim to "
                                 "join the pieces of the batch along",
                                 name, fmt::join(t.shape(), "x"), rows),
                     "run it on --tp x --pp ranks, without --micro-batches");
}

// Runs `share` (`count` rows) in `pieces` pieces one after another; the joined results.
NamedTensors run_pieces(CompiledModel& model, const NamedTensors& share,
                        const std::vector<std::string>& cut, int64_t count, int64_t pieces,
                        int64_t first_row) {
  const int64_t piece = count / pieces;
  std::map<std::string, std::vector<Tensor>> parts;
  for (int64_t m = 0; m < pieces; ++m) {
    NamedTensors in = share;
    for (const std::string& name : cut) in[name] = rows(share.at(name), m * piece, piece);
    NamedTensors got;
    try {
      got = model.run(in);
    } catch (const Error& e) {
      if (pieces == 1 && first_row == 0) throw;
      // A position in the message is the piece's: say which rows of the batch it holds.
      throw Error(e.kind(), fmt::format("rows {} to {} of the batch (micro-batch {} of {}): {}",
                                        first_row + m * piece, first_row + (m + 1) * piece - 1,
                                        m + 1, pieces, e.what()));
    }
    for (auto& [name, t] : got) {
      check_has_rows(name, t, piece);
      parts[name].push_back(std::move(t));
    }
  }
  NamedTensors out;
  for (auto& [name, p] : parts) out.emplace(name, p.size() == 1 ? std::move(p[0]) : join_rows(p));
  return out;
}

}  // namespace

void add_micro_batches_option(CLI::App& app, std::optional<int64_t>& into) {
  add_integer(app, "--micro-batches", "M", 1, into,
              "with --pp: cut the batch into M micro-batches that flow through the stages one "
              "after another, so the stages work at once (every rank returns the whole batch)");
}

BatchPlan plan_batch(Model& model, const std::string& graph_name,
                     const std::optional<int64_t>& micro_batches, const RankOptions& ranks,
                     const Channel* channel) {
  if (micro_batches && !ranks.pp)
    throw UsageError("--micro-batches cuts the batch for the stages of --pp P",
                     "give --pp P, or drop --micro-batches");
  BatchPlan plan;
  if (!channel) return plan;
  model.graph(graph_name);  // a user error naming the graphs when there is no such one
  Graph& g = model.graphs.at(graph_name);
  plan.replicas = replicas_of_job(ranks);
  place_in_replica(g, plan.replicas);
  if (!micro_batches) return plan;
  plan.micro_batches = *micro_batches;
  for (Node& n : g.nodes) {
    if (n.op != "Broadcast") continue;
    plan.root = static_cast<int32_t>(n.attr_int("root", 0));
    // An identity convert keeps the result's value, and so its name (the output's name); the
    // compiler's canonicalization drops it.
    n.op = "convert";
    n.attrs = {{"dtype", g.type(n.outputs[0]).dtype}};
  }
  return plan;
}

NamedTensors run_batch(CompiledModel& model, const Graph& g, const NamedTensors& inputs,
                       const BatchPlan& plan, Channel& channel) {
  const Replicas& r = plan.replicas;
  const int64_t pieces = std::max<int64_t>(plan.micro_batches, 1);
  int64_t batch = -1;
  const std::vector<std::string> cut = batch_inputs(g, inputs, &batch);
  if (batch < 0 || batch % (r.count * pieces))
    throw UsageError(
        r.count == 1
            ? fmt::format("a batch of {} does not split into {} equal micro-batches", batch, pieces)
            : fmt::format("a batch of {} does not split into {} equal shares ({} copies of the "
                          "model{})",
                          batch, r.count * pieces, r.count,
                          pieces > 1 ? fmt::format(" x {} micro-batches", pieces) : ""),
        "give a batch that is a multiple of it, or fewer ranks or micro-batches");
  const int64_t share = batch / r.count;
  NamedTensors mine = inputs;
  for (const std::string& name : cut) mine[name] = rows(inputs.at(name), r.index * share, share);
  NamedTensors out = run_pieces(model, mine, cut, share, pieces, r.index * share);

  // Every rank's results in one AllGather (all the same size: a stage's results have its
  // graph's shapes); each copy's come from its group's root.
  const int32_t world = r.count * r.group;
  for (auto& [name, t] : out) {
    std::vector<int64_t> shape = t.shape();
    Tensor all(t.dtype(), {world * static_cast<int64_t>(t.numel())});
    channel.all_gather({t.data(), t.nbytes()}, {all.data(), all.nbytes()}, t.dtype(), t.numel());
    shape[0] = batch;
    Tensor whole(t.dtype(), shape);
    for (int32_t copy = 0; copy < r.count; ++copy)
      std::memcpy(static_cast<char*>(whole.data()) + copy * t.nbytes(),
                  static_cast<const char*>(all.data()) + (copy * r.group + plan.root) * t.nbytes(),
                  t.nbytes());
    t = std::move(whole);
  }
  return out;
}

}  // namespace rlx::cli
