#include "collective_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "gloo_comm.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

constexpr const char* kCollectives[] = {"AllReduce", "AllGather", "ReduceScatter", "AllToAll",
                                        "Broadcast", "Send",      "Recv"};

bool is_collective(const std::string& op) {
  return std::any_of(std::begin(kCollectives), std::end(kCollectives),
                     [&](const char* c) { return op == c; });
}

template <typename T>
T attr_or(const lir::CallKernel& k, const char* key, T fallback) {
  auto it = k.attrs.find(key);
  return it == k.attrs.end() ? fallback : std::get<T>(it->second);
}

Reduce reduce_attr(const lir::CallKernel& k) {
  const std::string r = attr_or<std::string>(k, "reduce", "sum");
  if (r == "max") return Reduce::kMax;
  if (r == "min") return Reduce::kMin;
  if (r == "mean") return Reduce::kMean;
  return Reduce::kSum;
}

// The communicator `k` names, checked against the size the graph was built for.
std::shared_ptr<GlooComm> communicator_of(const lir::CallKernel& k) {
  const std::string op = k.callee.substr(7);
  std::shared_ptr<GlooComm> comm = world_comm(op);
  if (auto it = k.attrs.find("comm"); it != k.attrs.end())
    comm = comm->group(*parse_communicator(std::get<std::string>(it->second)));
  const int64_t world = attr_or<int64_t>(k, "world", comm->size());
  if (world != comm->size())
    throw_user_error(fmt::format(
        "{}{} was built for a communicator of {} ranks, and this job has {}{}: rebuild the "
        "graph for {} ranks or start the ranks it was built for",
        op, k.loc.empty() ? "" : " ('" + k.loc + "')", world, comm->size(),
        comm->name() == "world" ? "" : fmt::format(" in its group {}", comm->name()),
        comm->size()));
  return comm;
}

}  // namespace

std::optional<Verdict> claim_collective(const NodeSignature& s) {
  if (!is_collective(s.op)) return std::nullopt;
  // The op's verifier has already refused dtypes and attributes Gloo cannot take.
  return Verdict{true, "Gloo (TCP) on the communicator the node names (\"world\" by default)"};
}

bool is_collective_callee(const std::string& callee) {
  return callee.rfind("native:", 0) == 0 && is_collective(callee.substr(7));
}

void BackgroundCollective::wait() {
  if (!comm) return;
  std::shared_ptr<GlooComm> c = std::move(comm);
  comm = nullptr;
  c->wait(ticket);
}

bool runs_in_background(const lir::CallKernel& k) {
  static const bool sync = [] {
    const char* v = std::getenv("RLX_CPU_COLLECTIVES");
    return v && std::string(v) == "sync";
  }();
  return !sync && k.callee == "native:AllReduce";
}

BackgroundCollective start_collective(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                                      const std::vector<void*>& ptrs) {
  std::shared_ptr<GlooComm> comm = communicator_of(k);
  const uint64_t ticket = comm->start_all_reduce(ptrs[k.inputs[0]], ptrs[k.outputs[0]],
                                                 in[0].dtype, in[0].numel(), reduce_attr(k));
  return {std::move(comm), ticket};
}

void run_collective(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                    const std::vector<void*>& ptrs) {
  const std::string op = k.callee.substr(7);
  std::shared_ptr<GlooComm> comm = communicator_of(k);
  const lir::Buffer& x = in[0];
  const void* src = ptrs[k.inputs[0]];
  void* dst = ptrs[k.outputs[0]];
  const int64_t n = x.numel();
  const int64_t world = comm->size();
  if (op == "AllReduce") return comm->all_reduce(src, dst, x.dtype, n, reduce_attr(k));
  if (op == "AllGather") return comm->all_gather(src, dst, x.dtype, n);
  if (op == "ReduceScatter")
    return comm->reduce_scatter(src, dst, x.dtype, n / world, reduce_attr(k));
  if (op == "AllToAll") return comm->all_to_all(src, dst, x.dtype, n / world);
  const size_t bytes = static_cast<size_t>(x.nbytes());
  if (op == "Broadcast") {
    if (src != dst) std::memmove(dst, src, bytes);
    return comm->broadcast(dst, x.dtype, n, static_cast<int32_t>(attr_or<int64_t>(k, "root", 0)));
  }
  const auto peer = static_cast<int32_t>(attr_or<int64_t>(k, "peer", -1));
  if (op == "Send") {
    comm->send(src, x.dtype, n, peer);
    if (src != dst) std::memmove(dst, src, bytes);
    return;
  }
  comm->recv(dst, x.dtype, n, peer);
}

}  // namespace rlx::cpu
