// Contract 2.0 across the boundary: a MIR-level target (it compiles the graph, not LIR) that
// computes one f32 add, with a device whose buffers the host cannot address (so bindings cross
// as device buffers), a single-rank channel, one extension, and a failure of each kind.
#include <cstring>
#include <fstream>

#include "rlx/sdk/host_device.h"
#include "rlx/sdk/plugin.h"

namespace {

using namespace rlx;

// Host memory behind opaque handles: what a GPU's buffers look like to the runtime.
class OpaqueDevice final : public Device {
 public:
  DeviceLimits limits() const override { return {1u << 30, 8, 256, 48u << 10, 32}; }
  DeviceBuffer allocate(size_t bytes) override {
    if (bytes > (1u << 30)) throw_device_error("abi_contract: out of device memory");
    return host_.allocate(bytes);
  }
  void release(DeviceBuffer& b) noexcept override { host_.release(b); }
  void* host_address(const DeviceBuffer&) const override { return nullptr; }
  void upload(const DeviceBuffer& d, size_t o, const void* s, size_t n, QueueId q) override { host_.upload(d, o, s, n, q); }
  void download(const DeviceBuffer& s, size_t o, void* d, size_t n, QueueId q) override { host_.download(s, o, d, n, q); }
  void copy(const DeviceBuffer& s, size_t so, const DeviceBuffer& d, size_t dof, size_t n, QueueId q) override {
    host_.copy(s, so, d, dof, n, q);
  }
  QueueId create_queue() override { return ++queues_; }
  Event record(QueueId q) override { return host_.record(q); }
  void wait(QueueId q, const Event& e) override { host_.wait(q, e); }
  void synchronize(const Event& e) override { host_.synchronize(e); }

 private:
  sdk::HostDevice host_;
  QueueId queues_ = 0;
};

// z = x + y over f32, bindings [x, y, z]; each may be host memory or an OpaqueDevice buffer.
class AddExecutable final : public Executable {
 public:
  explicit AddExecutable(int64_t n) : n_(n) {}
  void run(const std::vector<void*>&) override { throw_internal_error("MIR executables run bound"); }
  void run_bound(const std::vector<BufferBinding>& b, QueueId) override {
    if (b.size() != 3) throw_internal_error("expected bindings x, y, z");
    auto at = [](const BufferBinding& x) { return static_cast<float*>(x.host ? x.host : x.device.handle); };
    const float* x = at(b[0]);
    const float* y = at(b[1]);
    float* z = at(b[2]);
    for (int64_t i = 0; i < n_; ++i) z[i] = x[i] + y[i];
  }

 private:
  int64_t n_;
};

class SingleRankChannel final : public Channel {
 public:
  int32_t rank() const override { return 0; }
  int32_t world_size() const override { return 1; }
  void all_reduce(const DeviceBuffer& in, const DeviceBuffer& out, DType t, int64_t n, ReduceOp, QueueId) override {
    std::memmove(out.handle, in.handle, static_cast<size_t>(n) * dtype_size(t));
  }
  void all_gather(const DeviceBuffer& in, const DeviceBuffer& out, DType t, int64_t n, QueueId) override {
    std::memmove(out.handle, in.handle, static_cast<size_t>(n) * dtype_size(t));
  }
  void reduce_scatter(const DeviceBuffer& in, const DeviceBuffer& out, DType t, int64_t n, ReduceOp, QueueId) override {
    std::memmove(out.handle, in.handle, static_cast<size_t>(n) * dtype_size(t));
  }
  void broadcast(const DeviceBuffer&, DType, int64_t, int32_t root, QueueId) override {
    if (root != 0) throw_user_error("broadcast root " + std::to_string(root) + " is not a rank of a 1-rank channel");
  }
  void send(const DeviceBuffer&, DType, int64_t, int32_t, QueueId) override {
    throw_user_error("a 1-rank channel has no peer to send to");
  }
  void recv(const DeviceBuffer&, DType, int64_t, int32_t, QueueId) override {
    throw_user_error("a 1-rank channel has no peer to receive from");
  }
};

struct AnswerExtension {
  int32_t answer;
};
constexpr AnswerExtension kAnswer{42};

class ContractTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "abi_contract"; }
  Verdict claim_native(const NodeSignature& s) const override { return Verdict::no("no native " + s.op); }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (s.op != "add") return Verdict::no("abi_contract computes add only");
    return Verdict::yes();
  }
  Verdict can_execute() const override { return Verdict::yes(); }
  ProgramLevel program_level() const override { return ProgramLevel::kMir; }
  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_internal_error("abi_contract takes MIR; compile(LIR) must not be called");
  }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_internal_error("abi_contract takes MIR; emit(LIR) must not be called");
  }
  std::unique_ptr<Executable> compile_mir(const Graph& g) override {
    if (g.nodes.size() != 1 || g.nodes[0].op != "add" || g.inputs.size() != 2)
      throw_unsupported("abi_contract compiles a graph of one add of its two inputs");
    const TensorType& t = g.type(g.outputs.at(0));
    if (t.dtype != DType::kF32) throw_unsupported("abi_contract adds f32 only");
    int64_t n = 1;
    for (const Dim& d : t.shape) n *= d.value;
    return std::make_unique<AddExecutable>(n);
  }
  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override {
    std::ofstream(dir / "ops.txt") << g.nodes.size() << " " << g.nodes.at(0).op << "\n";
    return {{"ops.txt", "op-list"}};
  }
  std::shared_ptr<Device> device() override { return device_; }
  std::unique_ptr<Channel> open_channel(const ChannelOptions& o) override {
    if (o.world_size != 1) throw_unsupported("abi_contract channels have one rank");
    return std::make_unique<SingleRankChannel>();
  }
  const void* extension(const std::string& name, uint32_t version) const override {
    return name == "abi.contract.answer" && version == 1 ? &kAnswer : nullptr;
  }

 private:
  std::shared_ptr<Device> device_ = std::make_shared<OpaqueDevice>();
};

}  // namespace

RLX_DEFINE_TARGET_PLUGIN(ContractTarget)
