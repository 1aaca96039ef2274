// Issues each AllReduce as soon as its operand exists. Data parallelism builds its gradient
// buckets after the whole backward pass (train/gradient_buckets.cpp), so in builder order a
// bucket's AllReduce would start only when every gradient is done; a target that runs AllReduce
// in the background (the cpu: GlooComm's worker) can only overlap it with the rest of the
// backward pass if it starts where its last gradient is computed.
//
// A list schedule over the nodes: a ready AllReduce, or a reshape/concat whose every use leads
// only into one (the bucket's flattening), goes first; every other node keeps its order. The
// order of communicating nodes among themselves never changes: every rank must meet the same
// collectives in the same order, whatever else moved.
#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

#include "rlx/core/op_registry.h"
#include "rlx/core/passes.h"

namespace rlx {

namespace {

bool feeds_only_urgent(const Graph& g, const Node& n,
                       const std::vector<std::vector<int32_t>>& users,
                       const std::vector<bool>& urgent) {
  if (n.op != "reshape" && n.op != "concat") return false;
  for (ValueId v : n.outputs) {
    if (users[v].empty()) return false;
    for (int32_t u : users[v])
      if (!urgent[u]) return false;
  }
  for (ValueId out : g.outputs)
    for (ValueId v : n.outputs)
      if (out == v) return false;
  return true;
}

}  // namespace

bool schedule_collectives_early(Graph& g) {
  const auto count = static_cast<int32_t>(g.nodes.size());
  const OpRegistry& ops = OpRegistry::instance();
  std::vector<bool> urgent(count, false), talks(count, false);
  bool any = false;
  for (int32_t i = 0; i < count; ++i) {
    const OpDef* def = ops.find(g.nodes[i].op);
    talks[i] = def && def->communicates;
    urgent[i] = g.nodes[i].op == "AllReduce";
    any = any || urgent[i];
  }
  if (!any) return false;

  std::vector<std::vector<int32_t>> users(g.values.size());
  for (int32_t i = 0; i < count; ++i)
    for (ValueId v : g.nodes[i].inputs) users[v].push_back(i);
  // Users come later in topological order, so one backward sweep settles the flattening chains.
  for (int32_t i = count; i-- > 0;)
    if (!urgent[i]) urgent[i] = feeds_only_urgent(g, g.nodes[i], users, urgent);

  // Pending operands per node: its distinct producers, plus the communicating node before it.
  std::vector<int32_t> waiting(count, 0);
  std::vector<std::vector<int32_t>> unblocks(count);
  int32_t last_talker = -1;
  for (int32_t i = 0; i < count; ++i) {
    std::vector<int32_t> producers;
    for (ValueId v : g.nodes[i].inputs) {
      const int32_t p = g.values[v].producer;
      if (p >= 0 && std::find(producers.begin(), producers.end(), p) == producers.end())
        producers.push_back(p);
    }
    if (talks[i]) {
      if (last_talker >= 0 &&
          std::find(producers.begin(), producers.end(), last_talker) == producers.end())
        producers.push_back(last_talker);
      last_talker = i;
    }
    waiting[i] = static_cast<int32_t>(producers.size());
    for (int32_t p : producers) unblocks[p].push_back(i);
  }

  using Entry = std::tuple<bool, int32_t>;  // (not urgent, original position): urgent first
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (int32_t i = 0; i < count; ++i)
    if (waiting[i] == 0) ready.emplace(!urgent[i], i);
  std::vector<int32_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    const int32_t i = std::get<1>(ready.top());
    ready.pop();
    order.push_back(i);
    for (int32_t u : unblocks[i])
      if (--waiting[u] == 0) ready.emplace(!urgent[u], u);
  }

  bool moved = false;
  for (int32_t k = 0; k < count; ++k) moved = moved || order[k] != k;
  if (!moved) return false;
  std::vector<Node> nodes;
  nodes.reserve(count);
  for (int32_t k = 0; k < count; ++k) {
    for (ValueId v : g.nodes[order[k]].outputs) g.values[v].producer = k;
    nodes.push_back(std::move(g.nodes[order[k]]));
  }
  g.nodes = std::move(nodes);
  return true;
}

}  // namespace rlx
