// Each collective node becomes one NCCL call on the communicator it names; mean is NCCL's own
// ncclAvg (NCCL 2.10+), not a sum and a scaling kernel. A Send's result is its input (copied on
// the stream when the plan gave it a buffer of its own), so what uses it runs after the send.
#include "collective_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "nccl_api.h"
#include "nccl_comm.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

constexpr std::array<const char*, 7> kCollectives = {
    "AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "Send", "Recv"};

bool is_collective(const std::string& op) {
  return std::find_if(kCollectives.begin(), kCollectives.end(),
                      [&](const char* c) { return op == c; }) != kCollectives.end();
}

std::string string_attr(const Attrs& attrs, const char* key, const std::string& fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  const auto* s = std::get_if<std::string>(&it->second);
  return s ? *s : fallback;
}

int64_t int_attr(const Attrs& attrs, const char* key, int64_t fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : fallback;
}

NcclReduce reduce_of(const Attrs& attrs) {
  const std::string r = string_attr(attrs, "reduce", "sum");
  if (r == "max") return NcclReduce::kMax;
  if (r == "min") return NcclReduce::kMin;
  if (r == "mean") return NcclReduce::kAvg;
  return NcclReduce::kSum;
}

// CUDA graphs may hold the collectives unless RLX_CUDA_GRAPHS=0 switched recording off (the
// device then never asks) or RLX_CUDA_NCCL_GRAPHS=0 keeps only the collectives out of them.
bool graphs_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("RLX_CUDA_NCCL_GRAPHS");
    return !(v && std::string(v) == "0");
  }();
  return allowed;
}

class CollectiveCall final : public gpu_host::VendorCall {
 public:
  CollectiveCall(CudaDevice& device, const lir::CallKernel& call, const lir::Program& program)
      : device_(device), call_(call), op_(call.callee.substr(7)) {
    const lir::Buffer& x = program.buffers.at(call.inputs.at(0));
    dtype_ = x.dtype;
    count_ = x.numel();
    bytes_ = static_cast<size_t>(x.nbytes());
  }

  void run(const std::vector<const gpu_host::DeviceBuffer*>& operands) override {
    NcclComm& comm = communicator();
    const void* in = operands.at(0)->handle;
    void* out = operands.at(1)->handle;
    const int64_t n = comm.size();
    if (op_ == "AllReduce") {
      comm.all_reduce(in, out, dtype_, count_, reduce_of(call_.attrs));
    } else if (op_ == "AllGather") {
      comm.all_gather(in, out, dtype_, count_);
    } else if (op_ == "ReduceScatter") {
      comm.reduce_scatter(in, out, dtype_, count_ / n, reduce_of(call_.attrs));
    } else if (op_ == "AllToAll") {
      comm.all_to_all(in, out, dtype_, count_ / n);
    } else if (op_ == "Broadcast") {
      comm.broadcast(in, out, dtype_, count_,
                     static_cast<int32_t>(int_attr(call_.attrs, "root", 0)));
    } else if (op_ == "Send") {
      comm.send(in, dtype_, count_, peer());
      if (in != out && bytes_ > 0) device_.copy(*operands[0], *operands[1], bytes_);
    } else {
      comm.recv(out, dtype_, count_, peer());
    }
    warmed_ = true;
  }

  // The watchdog's failure (a dead peer, the timeout) once the run's work has ended.
  void check() override {
    if (comm_) comm_->check();
  }

  // After one direct run: NCCL connects a collective's peers the first time it runs, which is
  // host work best kept out of a stream capture.
  bool recordable() const override {
    return comm_ && warmed_ && comm_->capturable() && graphs_allowed();
  }

 private:
  // The communicator the node names, checked against the size the graph was built for. Bound at
  // the first run for the program's life: a recorded run replays on it, so a channel opened later
  // serves programs compiled after it.
  NcclComm& communicator() {
    if (comm_) return *comm_;
    const std::string where = call_.loc.empty() ? op_ : fmt::format("{} ('{}')", op_, call_.loc);
    std::shared_ptr<NcclComm> comm = world_nccl_comm(op_);
    const std::string name = string_attr(call_.attrs, "comm", "world");
    const std::optional<Communicator> c = parse_communicator(name);
    if (!c)
      throw_user_error(fmt::format("{}: communicator \"{}\" is not one of world, block:G, stride:S",
                                   where, name));
    if (c->kind != Communicator::Kind::kWorld && (op_ == "Send" || op_ == "Recv"))
      throw_user_error(fmt::format(
          "{} names ranks of the job and takes the communicator \"world\" only, not \"{}\"", where,
          name));
    comm = comm->group(*c);
    const int64_t world = int_attr(call_.attrs, "world", comm->size());
    if (world != comm->size())
      throw_user_error(fmt::format(
          "{} was built for a communicator of {} ranks, and this job has {}{}: rebuild the graph "
          "for {} ranks or start the ranks it was built for",
          where, world, comm->size(),
          comm->name() == "world" ? "" : fmt::format(" in its group {}", comm->name()),
          comm->size()));
    comm_ = std::move(comm);
    return *comm_;
  }

  int32_t peer() const { return static_cast<int32_t>(int_attr(call_.attrs, "peer", -1)); }

  CudaDevice& device_;
  lir::CallKernel call_;
  std::string op_;
  DType dtype_ = DType::kF32;
  int64_t count_ = 0;
  size_t bytes_ = 0;
  std::shared_ptr<NcclComm> comm_;
  bool warmed_ = false;
};

}  // namespace

std::optional<Verdict> claim_collective(const NodeSignature& s) {
  if (!is_collective(s.op)) return std::nullopt;
  // A node dispatch marked for staging through the host (`staging` attribute; docs/parallel.md,
  // "Host-staged collectives") is the GPU-like targets' shared claim to answer, not NCCL's: it
  // exists only where this claim refused the op (no NCCL here) and the user allowed staging.
  if (s.attrs.count("staging")) return std::nullopt;
  std::string why;
  const NcclApi* api = nccl_api(&why);
  if (!api) return Verdict::no(fmt::format("cuda runs {} through NCCL, and {}", s.op, why));
  for (const auto* list : {&s.inputs, &s.outputs})
    for (const TensorType& t : *list)
      if (!nccl_dtype(t.dtype, api->version))
        return Verdict::no(fmt::format(
            "NCCL {} has no {} type for cuda's {}; convert the tensor first (rlx never changes a "
            "dtype silently)",
            api->version_text(), dtype_name(t.dtype), s.op));
  if (string_attr(s.attrs, "reduce", "sum") == "mean" && api->version < kNcclAvgVersion)
    return Verdict::no(fmt::format("cuda's {} mean needs ncclAvg (NCCL 2.10); this NCCL is {}",
                                   s.op, api->version_text()));
  return Verdict{true, fmt::format("NCCL {} on the device's stream, on the communicator the "
                                   "node names (\"world\" by default)",
                                   api->version_text())};
}

std::string collective_vendor(const lir::CallKernel& call) {
  if (call.callee.rfind("native:", 0) != 0 || !is_collective(call.callee.substr(7)) ||
      call.attrs.count("staging"))
    return "";
  return "NCCL";
}

std::unique_ptr<gpu_host::VendorCall> plan_collective(CudaDevice& device,
                                                      const lir::CallKernel& call,
                                                      const lir::Program& program) {
  std::string why;
  if (!nccl_api(&why))
    throw Error(ErrorKind::kCompile,
                fmt::format("cuda: {}{} needs NCCL: {}", call.callee.substr(7),
                            call.loc.empty() ? "" : fmt::format(" ('{}')", call.loc), why));
  return std::make_unique<CollectiveCall>(device, call, program);
}

}  // namespace rlx::cuda
