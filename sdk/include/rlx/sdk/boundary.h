// What crosses the plugin boundary. Every method is noexcept and reports failure as a Status;
// the plugin side (GuardedTarget in plugin.h) catches exceptions, the host side (registry)
// turns Status back into rlx::Error. Both sides are built by the same toolchain family (the ABI
// tag checks it), so C++ standard types may cross.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/lir.h"
#include "rlx/core/model.h"
#include "rlx/core/target.h"

namespace rlx::sdk {

struct Status {
  bool ok = true;
  std::string message;
  static Status good() { return {}; }
  static Status fail(std::string m) { return {false, std::move(m)}; }
};

class ExecutableBoundary {
 public:
  virtual ~ExecutableBoundary() = default;
  virtual Status run(const std::vector<void*>& buffers) noexcept = 0;
};

class TargetBoundary {
 public:
  virtual ~TargetBoundary() = default;
  virtual std::string name() const noexcept = 0;
  virtual std::string version() const noexcept = 0;
  virtual Verdict can_execute() const noexcept = 0;
  virtual Verdict claim_native(const NodeSignature& sig) const noexcept = 0;
  virtual Verdict accepts_primitive(const NodeSignature& sig) const noexcept = 0;
  virtual Status compile(const lir::Program& program,
                         std::unique_ptr<ExecutableBoundary>* out) noexcept = 0;
  virtual Status emit(const lir::Program& program, const std::filesystem::path& dir,
                      std::vector<Artifact>* out) noexcept = 0;
};

class ImporterBoundary {
 public:
  virtual ~ImporterBoundary() = default;
  virtual std::string name() const noexcept = 0;
  virtual std::string version() const noexcept = 0;
  virtual Status load(const std::filesystem::path& path, Model* out) noexcept = 0;
  // ABI 1.1 (appended, so the vtable of a 1.0 plugin is a prefix of this one; the host calls it
  // only on plugins whose handshake says minor >= 1).
  virtual Status load_with_options(const std::filesystem::path& path, const ImportOptions& options,
                                   Model* out) noexcept = 0;
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
