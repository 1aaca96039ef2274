// Finds plugins, reads and validates their manifests, probes the system libraries they need,
// loads them with Boost.DLL after the ABI handshake, and keeps a status per plugin plus a
// legality table per target. Listing never throws: every failure becomes a status or a problem.
//
// Before a library is first loaded into this process, rlx-plugin-probe loads it in a child
// process the same way, with a time limit; a plugin that crashes, hangs or exits there is
// broken with what happened and is never loaded here (docs/plugin-authors.md, "What runs where").
//
// Libraries are loaded on demand: discovery reads every manifest (so shadowing, problems and the
// importers' claims are known at once) but loads a library only when its plugin is asked for
// (target(), importer_for()) or when the whole list is (plugins()). A command that names one
// target then never pays for starting the others' drivers (PoCL's LLVM, a Vulkan ICD).
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/dispatch.h"
#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/target.h"

namespace rlx::registry {

enum class PluginStatus { kAvailable, kCodegenOnly, kUnavailable, kIncompatible, kBroken, kShadowed };
std::string_view status_name(PluginStatus s);  // "available", "codegen-only", ...

// op x dtype -> path or refusal, evaluated from each op's sample signature when a target loads.
struct LegalityTable {
  std::map<std::pair<std::string, DType>, OpLegality> entries;
  struct Counts { int native = 0, shared_ir = 0, rewritten = 0, illegal = 0; };
  Counts counts() const;
};

class Importer {
 public:
  virtual ~Importer() = default;
  virtual std::string name() const = 0;
  // With what the caller knows besides the path (ImportOptions in rlx/core/model.h).
  virtual Model load(const std::filesystem::path& path, const ImportOptions& options = {}) = 0;
  // The input tensors stored in `folder` in the format's own files, by graph input name of the
  // model at `model_path` (ONNX test data: input_0.pb, ...). An unsupported error when the
  // format has none or the plugin predates ABI 2.1.
  virtual std::map<std::string, Tensor> read_inputs(const std::filesystem::path& model_path,
                                                    const std::filesystem::path& folder) = 0;
};

struct Manifest {
  std::string name, kind, version, abi, library, description;
  std::vector<std::string> requires_libraries, platforms;
  std::vector<std::string> extensions;  // importers: file extensions they read (".onnx")
  std::vector<std::string> magic;       // importers: leading bytes of their files ("GGUF")
  std::vector<std::string> folders;     // importers: a folder holding one of these files is theirs
  std::map<std::string, std::string> capabilities;
};
// Parses and validates a manifest; throws a user error naming the file and the key.
Manifest read_manifest(const std::filesystem::path& path);

struct PluginRecord {
  std::string name;
  std::string kind;  // "target" | "importer"
  std::string version;
  std::string abi;   // "1.0"
  PluginStatus status = PluginStatus::kBroken;
  std::string detail;  // why it has this status, in words a user can act on
  std::string description;
  std::filesystem::path manifest_path, library_path;
  std::vector<std::string> extensions, magic, folders;
  std::shared_ptr<Target> target;      // set when a target loaded
  std::shared_ptr<Importer> importer;  // set when an importer loaded
  std::optional<LegalityTable> legality;
};

struct Problem {
  std::filesystem::path path;
  std::string message;
};

struct SearchDir {
  std::filesystem::path path;
  std::string origin;  // "--plugin-path", "RLX_PLUGIN_PATH", "user", "install prefix", "system"
};

struct Options {
  std::vector<std::filesystem::path> plugin_paths;  // --plugin-path, highest precedence
  bool build_legality = true;
  // The probe helper to run instead of the rlx-plugin-probe installed beside this library.
  std::optional<std::filesystem::path> probe_helper;
};

class Registry {
 public:
  Registry();
  Registry(Registry&&) noexcept;
  Registry& operator=(Registry&&) noexcept;
  ~Registry();

  // Search order of docs/architecture.md section 4; RLX_DISABLE_PLUGINS=1 loads nothing.
  static Registry discover(const Options& options = {});
  // Every plugin with its final status: loads each one not loaded yet.
  const std::vector<PluginRecord>& plugins() const;
  const std::vector<Problem>& problems() const { return problems_; }
  const std::vector<SearchDir>& search_dirs() const { return search_dirs_; }
  // The target to compile for; throws a user error naming its status and reason, or listing
  // the available targets when the name is unknown.
  std::shared_ptr<Target> target(const std::string& name) const;
  // The record of target `name` (its version and ABI, which compiled folders record and check),
  // loading it like target() but without throwing; nullopt when no usable target has that name.
  std::optional<PluginRecord> target_record(const std::string& name) const;
  // The importer that reads `path`: for a folder, by the marker files its manifest names; for a
  // file, by leading magic bytes, then by extension. nullptr when none claims it.
  std::shared_ptr<Importer> importer_for(const std::filesystem::path& path) const;
  // The importers that claim `path` but cannot be used (broken, incompatible, unavailable), in
  // the order importer_for tries them: why it found none, for the error a user sees.
  std::vector<PluginRecord> unusable_importers_for(const std::filesystem::path& path) const;

 private:
  struct Deferred;
  // Loading on demand is memoisation: every answer is the one eager loading would give, so the
  // lookups stay const and the records they fill in are mutable (under Deferred's lock).
  void ensure_loaded(size_t index) const;
  void ensure_all_loaded() const;
  // Indices of the importers whose manifests claim `path`, in the order they are tried: folder
  // markers for a folder; for a file, magic bytes, then extensions. Loads nothing.
  std::vector<size_t> claimants(const std::filesystem::path& path) const;

  mutable std::vector<PluginRecord> plugins_;
  std::vector<Problem> problems_;
  std::vector<SearchDir> search_dirs_;
  std::unique_ptr<Deferred> deferred_;  // manifests of plugins not loaded yet, and the lock
  friend class RegistryBuilder;
};

// The directories searched, in order, given the process environment and the rlx binary's path.
std::vector<SearchDir> plugin_search_dirs(const Options& options);

}  // namespace rlx::registry
