// What dispatch and the runtime need from a target. Core knows no plugin: the registry wraps
// each loaded plugin in an object implementing this interface, and tests may implement it
// directly.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/device.h"
#include "rlx/core/graph.h"
#include "rlx/core/lir.h"

namespace rlx {

// The part of a node a target decides legality on.
struct NodeSignature {
  std::string op;
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
  Attrs attrs;
};

// Either accepted (empty reason) or refused with a reason a user can read.
struct Verdict {
  bool ok = false;
  std::string reason;
  static Verdict yes() { return {true, {}}; }
  static Verdict no(std::string why) { return {false, std::move(why)}; }
};

struct Artifact {
  std::string path;  // relative to the output directory
  std::string kind;  // "c-source", "lir", ...
};

// Where one program buffer (an input or output) lives for a run: host memory, or a buffer of
// the target's Device (exactly one of the two is set).
struct BufferBinding {
  void* host = nullptr;
  DeviceBuffer device;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // buffers[i] points at the memory of program buffer i for inputs, outputs and constants;
  // temporaries live in the executable's own arena.
  virtual void run(const std::vector<void*>& buffers) = 0;
  // Like run(), with inputs and outputs bound to host memory or to buffers of the target's
  // Device, enqueued on `queue`. Host-bound outputs are written when it returns; device-bound
  // ones are ordered before later work on the queue. The default takes host bindings only.
  virtual void run_bound(const std::vector<BufferBinding>& buffers, QueueId queue);

 private:
  std::vector<void*> host_table_;  // the default run_bound's table
};

// Which program a target compiles: LIR kernels (the shared code generators), or the whole MIR
// graph for targets that hand it to another compiler (StableHLO to XLA, an MLX graph, a CoreML
// program, a hardware datapath).
enum class ProgramLevel { kLir, kMir };

class Target {
 public:
  virtual ~Target() = default;
  virtual std::string name() const = 0;
  // Path 1: does the target lower this HIR op itself?
  virtual Verdict claim_native(const NodeSignature& sig) const = 0;
  // Path 2 building block: can its code generator handle this MIR primitive?
  virtual Verdict accepts_primitive(const NodeSignature& sig) const = 0;
  // Whether the target can execute here (codegen-only targets refuse with the reason).
  virtual Verdict can_execute() const = 0;
  virtual std::unique_ptr<Executable> compile(const lir::Program& program) = 0;
  // Writes the target's artifacts for `program` into dir; returns what it wrote.
  virtual std::vector<Artifact> emit(const lir::Program& program,
                                     const std::filesystem::path& dir) = 0;

  // --- Contract 2.0; the defaults describe a target that computes in host memory on LIR. ---
  virtual ProgramLevel program_level() const { return ProgramLevel::kLir; }
  // For ProgramLevel::kMir: `mir` is specialised (static shapes) and verified; the executable's
  // bindings are the graph's inputs in order, then its outputs in order.
  virtual std::unique_ptr<Executable> compile_mir(const Graph& mir);
  virtual std::vector<Artifact> emit_mir(const Graph& mir, const std::filesystem::path& dir);
  // The target's memory and queues, or nullptr when it has none of its own. The same object for
  // the target's whole life, so buffers can be compared with the device they came from.
  virtual std::shared_ptr<Device> device();
  // Collectives on device() buffers; targets without them refuse (ErrorKind::kUnsupported).
  virtual std::unique_ptr<Channel> open_channel(const ChannelOptions& options);
  // An optional feature by name and version ("rlx.cuda.stream", 1): a pointer to a struct whose
  // layout that (name, version) defines, owned by the target, or nullptr when it has none. New
  // features arrive this way without an ABI major bump.
  virtual const void* extension(const std::string& name, uint32_t version) const;
};

}  // namespace rlx
