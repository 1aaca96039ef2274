// What crosses the plugin boundary (ABI 2.x). Every method is noexcept and reports failure as a
// Status with a kind; the plugin side (the Guarded* classes in plugin.h) catches exceptions and
// classifies them, the host side (registry) turns a Status back into an rlx::Error of the
// matching kind, so the CLI advises by kind. Both sides are built by the same toolchain family
// (the ABI tag checks it), so C++ standard types may cross.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/device.h"
#include "rlx/core/graph.h"
#include "rlx/core/lir.h"
#include "rlx/core/model.h"
#include "rlx/core/target.h"

namespace rlx::sdk {

// Why a call failed, as the host and the user need to know it.
enum class StatusKind : uint32_t {
  kOk = 0,
  kUser = 1,         // the input or the request is wrong: the message says what to change
  kUnsupported = 2,  // the target or its device cannot do this (no f64, codegen-only here)
  kDevice = 3,       // the device or its driver failed (lost device, out of device memory)
  kInternal = 4,     // a bug in the plugin (an unclassified exception)
};

struct Status {
  StatusKind kind = StatusKind::kOk;
  std::string message;
  bool ok() const { return kind == StatusKind::kOk; }
  static Status good() { return {}; }
  static Status fail(StatusKind kind, std::string m) { return {kind, std::move(m)}; }
};

class ExecutableBoundary {
 public:
  virtual ~ExecutableBoundary() = default;
  // buffers: one binding per program buffer (LIR programs) or per graph input then output (MIR).
  virtual Status run(const std::vector<BufferBinding>& buffers, QueueId queue) noexcept = 0;
};

class DeviceBoundary {
 public:
  virtual ~DeviceBoundary() = default;
  virtual DeviceLimits limits() const noexcept = 0;
  virtual Status allocate(size_t bytes, DeviceBuffer* out) noexcept = 0;
  virtual void release(DeviceBuffer& buffer) noexcept = 0;
  virtual void* host_address(const DeviceBuffer& buffer) const noexcept = 0;
  virtual Status upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes,
                        QueueId queue) noexcept = 0;
  virtual Status download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes,
                          QueueId queue) noexcept = 0;
  virtual Status copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst,
                      size_t dst_offset, size_t bytes, QueueId queue) noexcept = 0;
  virtual Status create_queue(QueueId* out) noexcept = 0;
  virtual Status record(QueueId queue, Event* out) noexcept = 0;
  virtual Status wait(QueueId queue, const Event& event) noexcept = 0;
  virtual Status synchronize(const Event& event) noexcept = 0;
};

// One collective call: what Channel's six methods take, in one struct so the boundary stays small.
enum class CollectiveOp : uint32_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kSend, kRecv };
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::kAllReduce;
  DeviceBuffer in, out;  // broadcast, send and recv use `in` only
  DType dtype = DType::kF32;
  int64_t count = 0;
  ReduceOp reduce = ReduceOp::kSum;
  int32_t peer = 0;  // broadcast: the root; send/recv: the other rank
  QueueId queue = 0;
};

class ChannelBoundary {
 public:
  virtual ~ChannelBoundary() = default;
  virtual int32_t rank() const noexcept = 0;
  virtual int32_t world_size() const noexcept = 0;
  virtual Status run(const CollectiveCall& call) noexcept = 0;
};

class TargetBoundary {
 public:
  virtual ~TargetBoundary() = default;
  virtual std::string name() const noexcept = 0;
  virtual std::string version() const noexcept = 0;
  virtual Verdict can_execute() const noexcept = 0;
  virtual Verdict claim_native(const NodeSignature& sig) const noexcept = 0;
  virtual Verdict accepts_primitive(const NodeSignature& sig) const noexcept = 0;
  virtual ProgramLevel program_level() const noexcept = 0;
  virtual Status compile(const lir::Program& program,
                         std::unique_ptr<ExecutableBoundary>* out) noexcept = 0;
  virtual Status emit(const lir::Program& program, const std::filesystem::path& dir,
                      std::vector<Artifact>* out) noexcept = 0;
  virtual Status compile_mir(const Graph& mir, std::unique_ptr<ExecutableBoundary>* out) noexcept = 0;
  virtual Status emit_mir(const Graph& mir, const std::filesystem::path& dir,
                          std::vector<Artifact>* out) noexcept = 0;
  // *out stays null for a target without a device of its own. The object lives as long as the
  // target; the host asks once.
  virtual Status device(DeviceBoundary** out) noexcept = 0;
  virtual Status open_channel(const ChannelOptions& options,
                              std::unique_ptr<ChannelBoundary>* out) noexcept = 0;
  // Not guarded: an extension's struct is the plugin's own C-like interface (see
  // Target::extension); nullptr when the plugin has no such (name, version).
  virtual const void* extension(const std::string& name, uint32_t version) const noexcept = 0;
};

class ImporterBoundary {
 public:
  virtual ~ImporterBoundary() = default;
  virtual std::string name() const noexcept = 0;
  virtual std::string version() const noexcept = 0;
  virtual Status load(const std::filesystem::path& path, const ImportOptions& options,
                      Model* out) noexcept = 0;
  // ABI 2.1: the inputs stored in `folder` for the model at `model_path`, by graph input name.
  virtual Status read_inputs(const std::filesystem::path& model_path,
                             const std::filesystem::path& folder,
                             std::map<std::string, Tensor>* out) noexcept = 0;
};

// The factory every plugin exports under RLX_FACTORY_SYMBOL. Exactly one of the two pointers is
// set on success; on failure `error` says why.
struct PluginObjects {
  std::unique_ptr<TargetBoundary> target;
  std::unique_ptr<ImporterBoundary> importer;
  std::string error;
};
// Signature of rlx_plugin_factory (C linkage, loaded with Boost.DLL by the registry).
using PluginFactory = void(PluginObjects*) noexcept;

}  // namespace rlx::sdk
