// What dispatch and the runtime need from a target. Core knows no plugin: the registry wraps
// each loaded plugin in an object implementing this interface, and tests may implement it
// directly.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

class Executable {
 public:
  virtual ~Executable() = default;
  // buffers[i] points at the memory of program buffer i for inputs, outputs and constants;
  // temporaries live in the executable's own arena.
  virtual void run(const std::vector<void*>& buffers) = 0;
};

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
};

}  // namespace rlx
