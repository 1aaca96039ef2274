// Declarations shared by the registry's source files and nothing else. Each step of discovery
// lives in its own file (manifest, search paths, probe, loader, adapters, legality) and reports
// failures as values, so that registry.cpp can turn every failure into a status or a problem
// and listing never throws.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "rlx/core/error.h"

#include "rlx/registry/registry.h"

namespace boost::dll {
class shared_library;
}

namespace rlx::sdk {
class TargetBoundary;
class ImporterBoundary;
struct Status;
enum class StatusKind : uint32_t;
}  // namespace rlx::sdk

namespace rlx::registry::detail {

// Manifest parsing without the file name in the message: read_manifest() prefixes the path for
// exceptions, while problems() keep the path in its own field.
std::variant<Manifest, std::string> parse_manifest(const std::filesystem::path& path);

// The note to show when RLX_DISABLE_PLUGINS switches plugins off, or nullopt when they are on.
std::optional<std::string> plugins_disabled_note();

// The library a manifest names, resolved in the manifest's folder: a file name or a relative path
// whose real path (symlinks followed) stays inside that folder. Otherwise why not, naming the
// manifest and the field. A library that does not exist yet resolves (check_loadable says so).
std::variant<std::filesystem::path, std::string> resolve_library(
    const std::filesystem::path& manifest_path, const std::string& library);

// "linux-x86_64": what [requires] platforms entries are matched against.
std::string platform_tag();
// Why this machine cannot run the plugin (platform or a [requires] library missing), or nullopt.
std::optional<std::string> probe_requirements(const Manifest& manifest);

using LibraryHandle = std::shared_ptr<boost::dll::shared_library>;

// The steps of loading a plugin, in order. The probe reports each one before taking it, so a
// plugin that crashes or hangs is blamed on the step it was in.
enum class LoadStage { kLoading, kHandshake, kFactory, kIdentity, kCanExecute, kLegality, kExit };
inline constexpr int kLoadStageCount = static_cast<int>(LoadStage::kExit) + 1;
using StageFn = std::function<void(LoadStage)>;
// "while loading the library", "in its factory (rlx_plugin_factory)", ...
std::string_view stage_words(LoadStage stage);

struct LoadResult {
  PluginStatus status = PluginStatus::kBroken;  // kAvailable here means "loaded"
  std::string detail;
  std::string abi;      // what the library reported, "major.minor"
  std::string version;  // what the plugin object reported
  LibraryHandle library;
  std::shared_ptr<Target> target;
  std::shared_ptr<Importer> importer;
};
// ABI handshake, factory call and name check; never throws.
LoadResult load_plugin(const Manifest& manifest, const std::filesystem::path& library_path,
                       const StageFn& on_stage = {});
// What the first use of a plugin does, in rlx and in the probe alike: load_plugin, then for a
// target can_execute() and (when asked) the legality table; fills in the record's final status.
// `libraries` keeps the loaded library mapped.
void load_record(const Manifest& manifest, PluginRecord& rec, bool build_legality,
                 std::vector<std::shared_ptr<void>>& libraries, const StageFn& on_stage = {});

// Adapters from the noexcept boundary back to the host interfaces. They hold `library` so the
// code behind the boundary objects stays mapped while any of them lives.
std::shared_ptr<Target> make_target_adapter(LibraryHandle library,
                                            std::unique_ptr<sdk::TargetBoundary> target);
// `abi_minor` is the plugin's: the adapter calls only what that minor has.
std::shared_ptr<Importer> make_importer_adapter(LibraryHandle library,
                                                std::unique_ptr<sdk::ImporterBoundary> importer,
                                                uint32_t abi_minor);

// A failed Status as the rlx::Error of its kind, "<plugin> plugin: <message>"; returns on ok.
ErrorKind error_kind_of(sdk::StatusKind kind);
void check_status(const std::string& plugin, const sdk::Status& status);

// Every registered op at every dtype; never throws (a failure becomes an illegal entry).
LegalityTable build_legality_table(const Target& target);

}  // namespace rlx::registry::detail
