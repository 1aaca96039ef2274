#include "pipeline_inference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "errors.h"
#include "options.h"
#include "rlx/core/error.h"
#include "train_options.h"

namespace rlx::cli {

namespace {

// The symbol of the batch: the first dim of the first input whose first dim is symbolic.
std::optional<std::string> batch_symbol(const Graph& g) {
  for (ValueId v : g.inputs) {
    const Shape& s = g.type(v).shape;
    if (!s.empty() && !s[0].is_static()) return s[0].sym;
  }
  return std::nullopt;
}

Tensor join_rows(const std::vector<Tensor>& parts) {
  std::vector<int64_t> shape = parts.front().shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.shape()[0];
  Tensor out(parts.front().dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(static_cast<char*>(out.data()) + at, p.data(), p.nbytes());
    at += p.nbytes();
  }
  return out;
}

}  // namespace

void add_micro_batches_option(CLI::App& app, std::optional<int64_t>& into) {
  add_integer(app, "--micro-batches", "M", 1, into,
              "with --pp: cut the batch into M micro-batches that flow through the stages one "
              "after another, so the stages work at once (every rank returns the whole batch)");
}

int32_t prepare_micro_batches(Model& model, const std::string& graph_name,
                              const std::optional<int64_t>& micro_batches, const RankOptions& ranks,
                              const Channel* channel) {
  if (!micro_batches) return -1;
  if (!ranks.pp)
    throw UsageError("--micro-batches cuts the batch for the stages of --pp P",
                     "give --pp P, or drop --micro-batches");
  model.graph(graph_name);  // a user error naming the graphs when there is no such one
  return channel ? take_out_result_broadcasts(model.graphs.at(graph_name)) : -1;
}

int32_t take_out_result_broadcasts(Graph& g) {
  int32_t root = -1;
  for (Node& n : g.nodes) {
    if (n.op != "Broadcast") continue;
    if (n.attrs.count("comm"))
      throw UsageError(fmt::format(
          "--micro-batches: the graph broadcasts %{} within a group of ranks, which is no "
          "pipeline's result",
          g.values[n.outputs[0]].name));
    root = static_cast<int32_t>(n.attr_int("root", 0));
    // An identity convert keeps the result's value, and so its name (the output's name); the
    // compiler's canonicalization drops it.
    n.op = "convert";
    n.attrs = {{"dtype", g.type(n.outputs[0]).dtype}};
  }
  return root;
}

NamedTensors run_micro_batches(CompiledModel& model, const Graph& g, const NamedTensors& inputs,
                               int64_t micro_batches, Channel& channel, int32_t root) {
  const std::optional<std::string> sym = batch_symbol(g);
  if (!sym)
    throw UsageError(
        "--micro-batches cuts the batch, and no input of this model has a "
        "symbolic first (batch) dim",
        "drop --micro-batches");
  int64_t batch = -1;
  std::vector<std::string> cut;
  for (ValueId v : g.inputs) {
    const Shape& s = g.type(v).shape;
    if (s.empty() || s[0].is_static() || s[0].sym != *sym) continue;
    const std::string& name = g.values[v].name;
    auto it = inputs.find(name);
    if (it == inputs.end() || it->second.shape().empty()) continue;
    if (batch < 0) batch = it->second.shape()[0];
    cut.push_back(name);
  }
  if (batch < 0 || batch % micro_batches)
    throw UsageError(fmt::format("--micro-batches {}: a batch of {} does not split into {} equal "
                                 "micro-batches",
                                 micro_batches, batch, micro_batches),
                     "give a --micro-batches that divides the batch");
  const int64_t share = batch / micro_batches;
  std::map<std::string, std::vector<Tensor>> parts;
  for (int64_t m = 0; m < micro_batches; ++m) {
    NamedTensors in = inputs;
    for (const std::string& name : cut) in[name] = rows(inputs.at(name), m * share, share);
    NamedTensors got;
    try {
      got = model.run(in);
    } catch (const Error& e) {
      // A position in the message is the micro-batch's: say which rows of the batch it holds.
      throw Error(e.kind(),
                  fmt::format("micro-batch {} of {} (rows {} to {} of the batch): {}", m + 1,
                              micro_batches, m * share, (m + 1) * share - 1, e.what()));
    }
    for (auto& [name, t] : got) {
      if (t.shape().empty() || t.shape()[0] != share)
        throw UsageError(fmt::format("--micro-batches: output {} ({} for a micro-batch of {}) "
                                     "has no batch dim to join the micro-batches along",
                                     name, fmt::join(t.shape(), "x"), share),
                         "drop --micro-batches");
      parts[name].push_back(std::move(t));
    }
  }
  NamedTensors out;
  for (auto& [name, pieces] : parts) {
    Tensor t = join_rows(pieces);
    channel.broadcast({t.data(), t.nbytes()}, t.dtype(), t.numel(), root);
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace rlx::cli
