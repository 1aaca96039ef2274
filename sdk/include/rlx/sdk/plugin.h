// Everything a plugin author includes. Implement rlx::sdk::TargetPlugin (or ImporterPlugin) with
// ordinary C++ that may throw rlx::Error, then put one line in a .cpp file:
//
//   RLX_DEFINE_TARGET_PLUGIN(MyTarget)
//
// It exports the ABI handshake and a factory whose objects catch every exception inside the
// plugin, so nothing but a Status crosses into the host. The plugin's version is the one its
// build gives it: rlx_add_plugin() defines RLX_PLUGIN_VERSION from the project's (or its own
// VERSION argument), and writes the same string into the manifest.
#pragma once
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>

#include "rlx/core/error.h"
#include "rlx/core/target.h"
#include "rlx/sdk/abi.h"
#include "rlx/sdk/boundary.h"

namespace rlx::sdk {

// A target: rlx::Target's methods (rlx/core/target.h), including the contract 2.0 defaults a
// plugin overrides as it grows: program_level/compile_mir/emit_mir, device, open_channel,
// extension.
class TargetPlugin : public rlx::Target {};

class ImporterPlugin {
 public:
  virtual ~ImporterPlugin() = default;
  virtual std::string name() const = 0;
  // Reads the model at `path` (a file, or a folder for formats stored as several files), with
  // what the caller knows besides the path (ImportOptions in rlx/core/model.h). A format whose
  // dims stay symbolic may ignore the sizes; input values are offers, frozen only for inputs
  // whose values decide shapes (listed under kFrozenInputsKey), so a format without such inputs
  // ignores them.
  virtual Model load(const std::filesystem::path& path, const ImportOptions& options) = 0;
  // Input tensors stored in the format's own files in `folder` (ONNX's test data: input_0.pb,
  // ...), by graph input name of the model at `model_path`; `rlx run --inputs FOLDER` reads
  // them through this. Formats without such files keep this refusal.
  virtual std::map<std::string, Tensor> read_inputs(const std::filesystem::path& model_path,
                                                    const std::filesystem::path& folder) {
    (void)model_path;
    throw Error(ErrorKind::kUnsupported, "the " + name() +
                                             " importer reads no input files of its own (" +
                                             folder.string() + " is a folder)");
  }
};

namespace detail {

// The kind a failure crosses the boundary with: rlx::Error kinds map one to one (a dispatch
// refusal inside a plugin is "unsupported"); out of memory is the device's; anything else is
// a bug in the plugin.
inline Status current_exception_status() {
  try {
    throw;
  } catch (const Error& e) {
    switch (e.kind()) {
      case ErrorKind::kUser:
        return Status::fail(StatusKind::kUser, e.what());
      case ErrorKind::kCompile:
      case ErrorKind::kUnsupported:
        return Status::fail(StatusKind::kUnsupported, e.what());
      case ErrorKind::kDevice:
        return Status::fail(StatusKind::kDevice, e.what());
      case ErrorKind::kPlugin:
      case ErrorKind::kInternal:
        break;
    }
    return Status::fail(StatusKind::kInternal, e.what());
  } catch (const std::bad_alloc&) {
    return Status::fail(StatusKind::kDevice, "out of memory");
  } catch (const std::exception& e) {
    return Status::fail(StatusKind::kInternal, e.what());
  } catch (...) {
    return Status::fail(StatusKind::kInternal, "unknown exception");
  }
}

template <typename F>
Status guarded(F&& f) noexcept {
  try {
    f();
    return Status::good();
  } catch (...) {
    return current_exception_status();
  }
}

template <typename F>
Verdict guarded_verdict(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return Verdict::no("the plugin failed while deciding: " + current_exception_status().message);
  }
}

class GuardedExecutable final : public ExecutableBoundary {
 public:
  explicit GuardedExecutable(std::unique_ptr<Executable> e) : impl_(std::move(e)) {}
  Status run(const std::vector<BufferBinding>& buffers, QueueId queue) noexcept override {
    return guarded([&] { impl_->run_bound(buffers, queue); });
  }

 private:
  std::unique_ptr<Executable> impl_;
};

class GuardedDevice final : public DeviceBoundary {
 public:
  explicit GuardedDevice(std::shared_ptr<Device> d) : impl_(std::move(d)) {}
  DeviceLimits limits() const noexcept override {
    try {
      return impl_->limits();
    } catch (...) {
      return {};
    }
  }
  Status allocate(size_t bytes, DeviceBuffer* out) noexcept override {
    return guarded([&] { *out = impl_->allocate(bytes); });
  }
  void release(DeviceBuffer& buffer) noexcept override { impl_->release(buffer); }
  void* host_address(const DeviceBuffer& buffer) const noexcept override {
    try {
      return impl_->host_address(buffer);
    } catch (...) {
      return nullptr;
    }
  }
  Status upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes,
                QueueId queue) noexcept override {
    return guarded([&] { impl_->upload(dst, offset, src, bytes, queue); });
  }
  Status download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes,
                  QueueId queue) noexcept override {
    return guarded([&] { impl_->download(src, offset, dst, bytes, queue); });
  }
  Status copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst, size_t dst_offset,
              size_t bytes, QueueId queue) noexcept override {
    return guarded([&] { impl_->copy(src, src_offset, dst, dst_offset, bytes, queue); });
  }
  Status create_queue(QueueId* out) noexcept override {
    return guarded([&] { *out = impl_->create_queue(); });
  }
  Status record(QueueId queue, Event* out) noexcept override {
    return guarded([&] { *out = impl_->record(queue); });
  }
  Status wait(QueueId queue, const Event& event) noexcept override {
    return guarded([&] { impl_->wait(queue, event); });
  }
  Status synchronize(const Event& event) noexcept override {
    return guarded([&] { impl_->synchronize(event); });
  }

 private:
  std::shared_ptr<Device> impl_;
};

class GuardedChannel final : public ChannelBoundary {
 public:
  explicit GuardedChannel(std::unique_ptr<Channel> c) : impl_(std::move(c)) {}
  int32_t rank() const noexcept override { return impl_->rank(); }
  int32_t world_size() const noexcept override { return impl_->world_size(); }
  Status run(const CollectiveCall& c) noexcept override {
    return guarded([&] {
      switch (c.op) {
        case CollectiveOp::kAllReduce:
          return impl_->all_reduce(c.in, c.out, c.dtype, c.count, c.reduce, c.queue);
        case CollectiveOp::kAllGather:
          return impl_->all_gather(c.in, c.out, c.dtype, c.count, c.queue);
        case CollectiveOp::kReduceScatter:
          return impl_->reduce_scatter(c.in, c.out, c.dtype, c.count, c.reduce, c.queue);
        case CollectiveOp::kBroadcast:
          return impl_->broadcast(c.in, c.dtype, c.count, c.peer, c.queue);
        case CollectiveOp::kSend:
          return impl_->send(c.in, c.dtype, c.count, c.peer, c.queue);
        case CollectiveOp::kRecv:
          return impl_->recv(c.in, c.dtype, c.count, c.peer, c.queue);
      }
      throw_internal_error("unknown collective");
    });
  }

 private:
  std::unique_ptr<Channel> impl_;
};

class GuardedTarget final : public TargetBoundary {
 public:
  GuardedTarget(std::unique_ptr<TargetPlugin> t, std::string version)
      : impl_(std::move(t)), version_(std::move(version)) {}
  std::string name() const noexcept override { return impl_->name(); }
  std::string version() const noexcept override { return version_; }
  Verdict can_execute() const noexcept override {
    return guarded_verdict([&] { return impl_->can_execute(); });
  }
  Verdict claim_native(const NodeSignature& s) const noexcept override {
    return guarded_verdict([&] { return impl_->claim_native(s); });
  }
  Verdict accepts_primitive(const NodeSignature& s) const noexcept override {
    return guarded_verdict([&] { return impl_->accepts_primitive(s); });
  }
  ProgramLevel program_level() const noexcept override {
    try {
      return impl_->program_level();
    } catch (...) {
      return ProgramLevel::kLir;
    }
  }
  Status compile(const lir::Program& p, std::unique_ptr<ExecutableBoundary>* out) noexcept override {
    return guarded([&] { *out = std::make_unique<GuardedExecutable>(impl_->compile(p)); });
  }
  Status emit(const lir::Program& p, const std::filesystem::path& dir,
              std::vector<Artifact>* out) noexcept override {
    return guarded([&] { *out = impl_->emit(p, dir); });
  }
  Status compile_mir(const Graph& g, std::unique_ptr<ExecutableBoundary>* out) noexcept override {
    return guarded([&] { *out = std::make_unique<GuardedExecutable>(impl_->compile_mir(g)); });
  }
  Status emit_mir(const Graph& g, const std::filesystem::path& dir,
                  std::vector<Artifact>* out) noexcept override {
    return guarded([&] { *out = impl_->emit_mir(g, dir); });
  }
  Status device(DeviceBoundary** out) noexcept override {
    return guarded([&] {
      if (!device_) {
        std::shared_ptr<Device> d = impl_->device();
        if (d) device_ = std::make_unique<GuardedDevice>(std::move(d));
      }
      *out = device_.get();
    });
  }
  Status open_channel(const ChannelOptions& options,
                      std::unique_ptr<ChannelBoundary>* out) noexcept override {
    return guarded([&] { *out = std::make_unique<GuardedChannel>(impl_->open_channel(options)); });
  }
  const void* extension(const std::string& name, uint32_t version) const noexcept override {
    try {
      return impl_->extension(name, version);
    } catch (...) {
      return nullptr;
    }
  }

 private:
  std::unique_ptr<TargetPlugin> impl_;
  std::string version_;
  std::unique_ptr<GuardedDevice> device_;
};

class GuardedImporter final : public ImporterBoundary {
 public:
  GuardedImporter(std::unique_ptr<ImporterPlugin> i, std::string version)
      : impl_(std::move(i)), version_(std::move(version)) {}
  std::string name() const noexcept override { return impl_->name(); }
  std::string version() const noexcept override { return version_; }
  Status load(const std::filesystem::path& path, const ImportOptions& options,
              Model* out) noexcept override {
    return guarded([&] { *out = impl_->load(path, options); });
  }
  Status read_inputs(const std::filesystem::path& model_path, const std::filesystem::path& folder,
                     std::map<std::string, Tensor>* out) noexcept override {
    return guarded([&] { *out = impl_->read_inputs(model_path, folder); });
  }

 private:
  std::unique_ptr<ImporterPlugin> impl_;
  std::string version_;
};

}  // namespace detail
}  // namespace rlx::sdk

// RLX_PLUGIN_VERSION comes from the build (rlx_add_plugin() defines it); a plugin built another
// way must define it as a string literal.
#define RLX_DEFINE_PLUGIN_ABI_(kind_str)                                            \
  RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {                          \
    static const RlxPluginAbi abi{RLX_ABI_MAJOR, RLX_ABI_MINOR, RLX_TOOLCHAIN_TAG, kind_str}; \
    return &abi;                                                                    \
  }

#define RLX_DEFINE_TARGET_PLUGIN(Class)                                                   \
  RLX_DEFINE_PLUGIN_ABI_("target")                                                        \
  RLX_PLUGIN_EXPORT void rlx_plugin_factory(::rlx::sdk::PluginObjects* out) noexcept {    \
    try {                                                                                 \
      out->target = std::make_unique<::rlx::sdk::detail::GuardedTarget>(                  \
          std::make_unique<Class>(), RLX_PLUGIN_VERSION);                     \
    } catch (...) {                                                                       \
      out->error = ::rlx::sdk::detail::current_exception_status().message;                \
    }                                                                                     \
  }

#define RLX_DEFINE_IMPORTER_PLUGIN(Class)                                                 \
  RLX_DEFINE_PLUGIN_ABI_("importer")                                                      \
  RLX_PLUGIN_EXPORT void rlx_plugin_factory(::rlx::sdk::PluginObjects* out) noexcept {    \
    try {                                                                                 \
      out->importer = std::make_unique<::rlx::sdk::detail::GuardedImporter>(              \
          std::make_unique<Class>(), RLX_PLUGIN_VERSION);                     \
    } catch (...) {                                                                       \
      out->error = ::rlx::sdk::detail::current_exception_status().message;                \
    }                                                                                     \
  }
