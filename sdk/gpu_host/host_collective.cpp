#include "host_collective.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <vector>

#include "rlx/core/half.h"
#include "rlx/core/op_registry.h"

namespace rlx::gpu_host {

namespace {

struct Staging {
  std::atomic<bool> allowed{false};
  std::atomic<Channel*> channel{nullptr};
};

Staging& staging() {
  static Staging s;
  return s;
}

std::string string_attr(const Attrs& attrs, const std::string& key, const std::string& fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  const auto* s = std::get_if<std::string>(&it->second);
  return s ? *s : fallback;
}

int64_t int_attr(const Attrs& attrs, const std::string& key, int64_t fallback) {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  const auto* i = std::get_if<int64_t>(&it->second);
  return i ? *i : fallback;
}

// x /= n elementwise, for AllReduce's mean (the channel reduces by sum only).
void divide(std::vector<uint8_t>& bytes, DType dtype, int64_t n) {
  const size_t count = bytes.size() / dtype_size(dtype);
  const double d = static_cast<double>(n);
  switch (dtype) {
    case DType::kF32: {
      auto* x = reinterpret_cast<float*>(bytes.data());
      for (size_t i = 0; i < count; ++i) x[i] = static_cast<float>(x[i] / d);
      return;
    }
    case DType::kF64: {
      auto* x = reinterpret_cast<double*>(bytes.data());
      for (size_t i = 0; i < count; ++i) x[i] /= d;
      return;
    }
    case DType::kF16: {
      auto* x = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < count; ++i)
        x[i] = f32_to_f16(static_cast<float>(f16_to_f32(x[i]) / d));
      return;
    }
    case DType::kBF16: {
      auto* x = reinterpret_cast<uint16_t*>(bytes.data());
      for (size_t i = 0; i < count; ++i)
        x[i] = f32_to_bf16(static_cast<float>(bf16_to_f32(x[i]) / d));
      return;
    }
    default:
      throw_internal_error(fmt::format("AllReduce mean on {}", dtype_name(dtype)));
  }
}

class HostCollectiveCall final : public VendorCall {
 public:
  HostCollectiveCall(DeviceApi& api, const lir::CallKernel& call, const lir::Program& program)
      : api_(api),
        op_(call.callee.substr(call.callee.find(':') + 1)),
        where_(call.loc.empty() ? op_ : fmt::format("{} ('{}')", op_, call.loc)),
        reduce_(string_attr(call.attrs, "reduce", "sum")),
        world_(int_attr(call.attrs, "world", 0)),
        root_(int_attr(call.attrs, "root", 0)),
        peer_(int_attr(call.attrs, "peer", -1)) {
    if (call.inputs.size() != 1 || call.outputs.size() != 1)
      throw_internal_error(fmt::format("{}: a staged {} has {} inputs and {} outputs, not 1 and 1",
                                       api_.target_name(), where_, call.inputs.size(),
                                       call.outputs.size()));
    const lir::Buffer &in = program.buffers.at(call.inputs[0]),
                      &out = program.buffers.at(call.outputs[0]);
    dtype_ = in.dtype;
    in_.resize(static_cast<size_t>(in.nbytes()));
    out_.resize(static_cast<size_t>(out.nbytes()));
  }

  void run(const std::vector<const DeviceBuffer*>& operands) override {
    Channel* channel = staging().channel.load();
    if (!channel)
      throw Error(ErrorKind::kUser,
                  fmt::format("{}: {} is staged through the host and runs on the job's channel, "
                              "and this process has joined no job; start the ranks with --nproc N, "
                              "mpirun or srun",
                              api_.target_name(), where_));
    const DeviceBuffer &in = *operands.at(0), &out = *operands.at(1);
    const int64_t size = dtype_size(dtype_);
    const int64_t count_in = static_cast<int64_t>(in_.size()) / size,
                  count_out = static_cast<int64_t>(out_.size()) / size;
    if ((op_ == "AllGather" || op_ == "ReduceScatter") && world_ != channel->world_size())
      throw Error(ErrorKind::kUser,
                  fmt::format("{} was built for a communicator of {} ranks, and this job has {}",
                              where_, world_, channel->world_size()));
    // Ordered after the kernels that wrote the operand: download returns when it is on the host.
    if (op_ != "Recv" && !in_.empty()) api_.download(in, in_.data(), in_.size());
    const DeviceBuffer host_in{in_.data(), in_.size()}, host_out{out_.data(), out_.size()};
    if (op_ == "AllReduce") {
      channel->all_reduce(host_in, host_out, dtype_, count_in, reduce_op());
      if (reduce_ == "mean") divide(out_, dtype_, channel->world_size());
    } else if (op_ == "AllGather") {
      channel->all_gather(host_in, host_out, dtype_, count_in);
    } else if (op_ == "ReduceScatter") {
      channel->reduce_scatter(host_in, host_out, dtype_, count_out, reduce_op());
      if (reduce_ == "mean") divide(out_, dtype_, channel->world_size());
    } else if (op_ == "Broadcast") {
      std::memcpy(out_.data(), in_.data(), in_.size());
      channel->broadcast(host_out, dtype_, count_out, static_cast<int32_t>(root_));
    } else if (op_ == "Send") {
      channel->send(host_in, dtype_, count_in, static_cast<int32_t>(peer_));
      // The result is x itself.
      if (in.handle != out.handle && !in_.empty()) api_.copy(in, out, in_.size());
      return;
    } else if (op_ == "Recv") {
      channel->recv(host_out, dtype_, count_out, static_cast<int32_t>(peer_));
    } else {
      throw_internal_error(fmt::format("{}: {} cannot be staged", api_.target_name(), where_));
    }
    if (!out_.empty()) api_.upload(out, out_.data(), out_.size());
  }

 private:
  ReduceOp reduce_op() const {
    if (reduce_ == "max") return ReduceOp::kMax;
    if (reduce_ == "min") return ReduceOp::kMin;
    return ReduceOp::kSum;  // sum, and mean divided after
  }

  DeviceApi& api_;
  std::string op_, where_, reduce_;
  int64_t world_, root_, peer_;
  DType dtype_ = DType::kF32;
  std::vector<uint8_t> in_, out_;  // host copies, kept across runs
};

}  // namespace

bool host_staged(const Attrs& attrs) {
  return string_attr(attrs, kStagingAttr, "") == kStagingHost;
}

Verdict claim_host_staged(const NodeSignature& s, const std::string& target) {
  if (!OpRegistry::instance().get(s.op).communicates)
    return Verdict::no(fmt::format("{} is no collective, so it is not staged", s.op));
  if (!staging().allowed.load())
    return Verdict::no(fmt::format(
        "{0} has no collective engine, and stages {1} through the host only where the user "
        "allows it: pass --allow-host-collectives (each run then copies the operand to the host, "
        "runs {1} on the cpu target's Gloo channel and copies the result back)",
        target, s.op));
  // The channel is the job's world (Channel has no communicator groups).
  const std::string comm = string_attr(s.attrs, "comm", "world");
  if (comm != "world")
    return Verdict::no(fmt::format(
        "{} stages collectives on the job's world only (the host channel has no groups), and "
        "this {} runs on communicator \"{}\"",
        target, s.op, comm));
  if (s.op == "AllToAll")
    return Verdict::no(
        fmt::format("the host channel has no all-to-all, so {} cannot stage {}", target, s.op));
  return Verdict{true, "staged through the host: device -> host copy, the channel, copy back"};
}

const HostCollectivesV1* host_collectives_v1() {
  static const HostCollectivesV1 table = [] {
    HostCollectivesV1 t;
    t.allow = [](void*) noexcept { staging().allowed = true; };
    t.use_channel = [](void*, Channel* channel) noexcept { staging().channel = channel; };
    return t;
  }();
  return &table;
}

std::unique_ptr<VendorCall> plan_host_collective(DeviceApi& api, const lir::CallKernel& call,
                                                 const lir::Program& program) {
  return std::make_unique<HostCollectiveCall>(api, call, program);
}

}  // namespace rlx::gpu_host
