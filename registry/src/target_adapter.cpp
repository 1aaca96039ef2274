// Host side of the target boundary: presents a plugin's TargetBoundary as an rlx::Target (with
// its Device and Channels); each failed sdk::Status comes back as the rlx::Error of its kind.
// Every adapter holds the library handle, so the code behind the boundary objects stays mapped
// while any of them lives.
#include <fmt/format.h>

#include <mutex>

#include "internal.h"
#include "rlx/core/error.h"
#include "rlx/sdk/boundary.h"

namespace rlx::registry::detail {
namespace {

class ExecutableAdapter final : public Executable {
 public:
  ExecutableAdapter(LibraryHandle library, std::string target,
                    std::unique_ptr<sdk::ExecutableBoundary> impl)
      : library_(std::move(library)), target_(std::move(target)), impl_(std::move(impl)) {}

  // Steady-state runs allocate nothing: the binding table is kept between runs (an executable
  // is run by one thread at a time).
  void run(const std::vector<void*>& buffers) override {
    bound_.resize(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) bound_[i] = BufferBinding{buffers[i], {}};
    run_bound(bound_, 0);
  }
  void run_bound(const std::vector<BufferBinding>& buffers, QueueId queue) override {
    check_status(target_, impl_->run(buffers, queue));
  }

 private:
  // Declared first so it is destroyed last: impl_'s destructor is code inside the library.
  LibraryHandle library_;
  std::string target_;
  std::unique_ptr<sdk::ExecutableBoundary> impl_;
  std::vector<BufferBinding> bound_;
};

// The boundary device is owned by the plugin's target object, and this adapter by the target
// adapter, which hands it out through aliasing pointers that keep the target alive.
class DeviceAdapter final : public Device {
 public:
  DeviceAdapter(std::string target, sdk::DeviceBoundary* impl) : target_(std::move(target)), impl_(impl) {}

  DeviceLimits limits() const override { return impl_->limits(); }
  DeviceBuffer allocate(size_t bytes) override {
    DeviceBuffer b;
    check_status(target_, impl_->allocate(bytes, &b));
    if (!b.valid()) throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: allocate returned no buffer", target_));
    return b;
  }
  void release(DeviceBuffer& buffer) noexcept override { impl_->release(buffer); }
  void* host_address(const DeviceBuffer& buffer) const override { return impl_->host_address(buffer); }
  void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes, QueueId q) override {
    check_status(target_, impl_->upload(dst, offset, src, bytes, q));
  }
  void download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes, QueueId q) override {
    check_status(target_, impl_->download(src, offset, dst, bytes, q));
  }
  void copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset,
            size_t bytes, QueueId q) override {
    check_status(target_, impl_->copy(src, src_offset, dst, dst_offset, bytes, q));
  }
  QueueId create_queue() override {
    QueueId q = 0;
    check_status(target_, impl_->create_queue(&q));
    return q;
  }
  Event record(QueueId queue) override {
    Event e;
    check_status(target_, impl_->record(queue, &e));
    return e;
  }
  void wait(QueueId queue, const Event& event) override { check_status(target_, impl_->wait(queue, event)); }
  void synchronize(const Event& event) override { check_status(target_, impl_->synchronize(event)); }

 private:
  std::string target_;
  sdk::DeviceBoundary* impl_;
};

class ChannelAdapter final : public Channel {
 public:
  ChannelAdapter(LibraryHandle library, std::string target, std::unique_ptr<sdk::ChannelBoundary> impl)
      : library_(std::move(library)), target_(std::move(target)), impl_(std::move(impl)) {}

  int32_t rank() const override { return impl_->rank(); }
  int32_t world_size() const override { return impl_->world_size(); }
  void all_reduce(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count, ReduceOp op,
                  QueueId q) override {
    call({sdk::CollectiveOp::kAllReduce, in, out, dtype, count, op, 0, q});
  }
  void all_gather(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count, QueueId q) override {
    call({sdk::CollectiveOp::kAllGather, in, out, dtype, count, ReduceOp::kSum, 0, q});
  }
  void reduce_scatter(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count, ReduceOp op,
                      QueueId q) override {
    call({sdk::CollectiveOp::kReduceScatter, in, out, dtype, count, op, 0, q});
  }
  void broadcast(const DeviceBuffer& b, DType dtype, int64_t count, int32_t root, QueueId q) override {
    call({sdk::CollectiveOp::kBroadcast, b, {}, dtype, count, ReduceOp::kSum, root, q});
  }
  void send(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId q) override {
    call({sdk::CollectiveOp::kSend, b, {}, dtype, count, ReduceOp::kSum, peer, q});
  }
  void recv(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId q) override {
    call({sdk::CollectiveOp::kRecv, b, {}, dtype, count, ReduceOp::kSum, peer, q});
  }

 private:
  void call(const sdk::CollectiveCall& c) { check_status(target_, impl_->run(c)); }

  LibraryHandle library_;
  std::string target_;
  std::unique_ptr<sdk::ChannelBoundary> impl_;
};

class TargetAdapter final : public Target, public std::enable_shared_from_this<TargetAdapter> {
 public:
  TargetAdapter(LibraryHandle library, std::unique_ptr<sdk::TargetBoundary> impl)
      : library_(std::move(library)), impl_(std::move(impl)), name_(impl_->name()) {}

  std::string name() const override { return name_; }
  Verdict claim_native(const NodeSignature& sig) const override { return impl_->claim_native(sig); }
  Verdict accepts_primitive(const NodeSignature& sig) const override {
    return impl_->accepts_primitive(sig);
  }
  Verdict can_execute() const override { return impl_->can_execute(); }
  ProgramLevel program_level() const override { return impl_->program_level(); }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    std::unique_ptr<sdk::ExecutableBoundary> exe;
    check_status(name_, impl_->compile(program, &exe));
    return wrap(std::move(exe));
  }
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    std::vector<Artifact> artifacts;
    check_status(name_, impl_->emit(program, dir, &artifacts));
    return artifacts;
  }
  std::unique_ptr<Executable> compile_mir(const Graph& mir) override {
    std::unique_ptr<sdk::ExecutableBoundary> exe;
    check_status(name_, impl_->compile_mir(mir, &exe));
    return wrap(std::move(exe));
  }
  std::vector<Artifact> emit_mir(const Graph& mir, const std::filesystem::path& dir) override {
    std::vector<Artifact> artifacts;
    check_status(name_, impl_->emit_mir(mir, dir, &artifacts));
    return artifacts;
  }

  std::shared_ptr<Device> device() override {
    std::lock_guard<std::mutex> lock(device_mutex_);
    if (!device_asked_) {
      sdk::DeviceBoundary* d = nullptr;
      check_status(name_, impl_->device(&d));
      device_asked_ = true;
      if (d) device_ = std::make_unique<DeviceAdapter>(name_, d);
    }
    if (!device_) return nullptr;
    return std::shared_ptr<Device>(shared_from_this(), device_.get());
  }

  std::unique_ptr<Channel> open_channel(const ChannelOptions& options) override {
    std::unique_ptr<sdk::ChannelBoundary> c;
    check_status(name_, impl_->open_channel(options, &c));
    if (!c) throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: open_channel returned no channel", name_));
    return std::make_unique<ChannelAdapter>(library_, name_, std::move(c));
  }

  const void* extension(const std::string& name, uint32_t version) const override {
    return impl_->extension(name, version);
  }

 private:
  std::unique_ptr<Executable> wrap(std::unique_ptr<sdk::ExecutableBoundary> exe) {
    if (!exe) throw Error(ErrorKind::kPlugin, fmt::format("{} plugin: compile reported success but returned no executable", name_));
    return std::make_unique<ExecutableAdapter>(library_, name_, std::move(exe));
  }

  LibraryHandle library_;  // first, so destroyed after impl_
  std::unique_ptr<sdk::TargetBoundary> impl_;
  std::string name_;  // cached: name() is called for every message and report line
  std::mutex device_mutex_;
  bool device_asked_ = false;
  std::unique_ptr<DeviceAdapter> device_;  // points into impl_'s device; declared after it
};

}  // namespace

std::shared_ptr<Target> make_target_adapter(LibraryHandle library,
                                            std::unique_ptr<sdk::TargetBoundary> target) {
  return std::make_shared<TargetAdapter>(std::move(library), std::move(target));
}

}  // namespace rlx::registry::detail
