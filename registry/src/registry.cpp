// Discovery: walks the search folders in order, gives each manifest a record with a status, and
// loads the plugins that can be used here. Every failure becomes a status or a problem, so one
// bad plugin never hides the others.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <mutex>

#include "internal.h"
#include "probe.h"
#include "rlx/core/error.h"
#include "rlx/core/spelling.h"

namespace rlx::registry {

namespace fs = std::filesystem;

std::string_view status_name(PluginStatus s) {
  switch (s) {
    case PluginStatus::kAvailable:
      return "available";
    case PluginStatus::kCodegenOnly:
      return "codegen-only";
    case PluginStatus::kUnavailable:
      return "unavailable";
    case PluginStatus::kIncompatible:
      return "incompatible";
    case PluginStatus::kBroken:
      return "broken";
    case PluginStatus::kShadowed:
      return "shadowed";
  }
  return "unknown";
}

// What discovery leaves for later: the manifest of each plugin whose library has not been
// loaded yet (index-aligned with plugins_), the loaded libraries, and the lock for loading.
struct Registry::Deferred {
  // Recursive: the public lookups hold it for their whole walk over the records (a record may
  // change while it loads) and load through ensure_loaded, which takes it again.
  std::recursive_mutex lock;
  std::vector<std::optional<Manifest>> pending;
  std::vector<std::shared_ptr<void>> libraries;  // keeps loaded libraries alive
  bool build_legality = true;
  detail::ProbeSettings probe;
  std::map<size_t, detail::ProbeVerdict> probed;  // verdicts of plugins probed, not yet loaded
};

Registry::Registry() : deferred_(std::make_unique<Deferred>()) {}
Registry::Registry(Registry&&) noexcept = default;
Registry& Registry::operator=(Registry&&) noexcept = default;
Registry::~Registry() = default;

void Registry::ensure_loaded(size_t index) const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  std::optional<Manifest>& m = deferred_->pending[index];
  if (!m) return;
  PluginRecord& rec = plugins_[index];
  // The probe first, in a child process: a plugin that fails there is never mapped here.
  // Without the helper (a broken install, listed as a problem) plugins load unchecked.
  if (!deferred_->probe.helper.empty()) {
    auto known = deferred_->probed.find(index);
    detail::ProbeVerdict verdict = known != deferred_->probed.end()
                                       ? std::move(known->second)
                                       : detail::probe_plugins({&rec}, deferred_->probe).at(0);
    deferred_->probed.erase(index);
    if (!verdict.passed) {
      rec.status = verdict.status;
      rec.detail = verdict.detail;
      if (!verdict.abi.empty()) rec.abi = verdict.abi;
      m.reset();
      return;
    }
  }
  detail::load_record(*m, rec, deferred_->build_legality, deferred_->libraries);
  m.reset();
}

void Registry::ensure_all_loaded() const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  // Every probe first, several at once (a cold listing waits for the slowest few, not the sum),
  // then the loads in order.
  if (!deferred_->probe.helper.empty()) {
    std::vector<size_t> indices;
    std::vector<const PluginRecord*> recs;
    for (size_t i = 0; i < plugins_.size(); ++i)
      if (deferred_->pending[i] && !deferred_->probed.count(i)) {
        indices.push_back(i);
        recs.push_back(&plugins_[i]);
      }
    std::vector<detail::ProbeVerdict> verdicts = detail::probe_plugins(recs, deferred_->probe);
    for (size_t k = 0; k < indices.size(); ++k)
      deferred_->probed[indices[k]] = std::move(verdicts[k]);
  }
  for (size_t i = 0; i < plugins_.size(); ++i) ensure_loaded(i);
}

const std::vector<PluginRecord>& Registry::plugins() const {
  // After this every record is final, so callers read the list without the lock.
  ensure_all_loaded();
  return plugins_;
}

// Fills a Registry's private members (it is the friend named in registry.h).
class RegistryBuilder {
 public:
  explicit RegistryBuilder(const Options& options) : options_(options) {
    reg_.deferred_->build_legality = options.build_legality;
  }

  Registry build() && {
    if (auto note = detail::plugins_disabled_note()) {
      reg_.problems_.push_back({{}, *note});
      return std::move(reg_);
    }
    // A folder the user named explicitly and that is missing is worth saying; the default
    // folders are expected to be missing and are skipped silently.
    for (const fs::path& p : options_.plugin_paths) {
      std::error_code ec;
      if (!fs::is_directory(p, ec)) reg_.problems_.push_back({p, "--plugin-path folder not found"});
    }
    reg_.search_dirs_ = plugin_search_dirs(options_);
    for (const SearchDir& dir : reg_.search_dirs_) scan(dir.path);
    const auto& pending = reg_.deferred_->pending;
    const bool to_load =
        std::any_of(pending.begin(), pending.end(),
                    [](const std::optional<Manifest>& m) { return m.has_value(); });
    reg_.deferred_->probe = detail::probe_settings(options_, to_load, reg_.problems_);
    return std::move(reg_);
  }

 private:
  void scan(const fs::path& dir) {
    std::vector<fs::path> manifests;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->path().extension() == ".toml" && it->is_regular_file(type_ec))
        manifests.push_back(it->path());
    }
    if (ec) reg_.problems_.push_back({dir, "cannot list the folder: " + ec.message()});
    // Directory order is arbitrary; sorting makes listings and shadowing reproducible.
    std::sort(manifests.begin(), manifests.end());
    for (const fs::path& m : manifests) add(m);
  }

  void add(const fs::path& manifest_path) {
    auto parsed = detail::parse_manifest(manifest_path);
    if (auto* reason = std::get_if<std::string>(&parsed)) {
      reg_.problems_.push_back({manifest_path, *reason});
      return;
    }
    Manifest& m = std::get<Manifest>(parsed);
    PluginRecord rec;
    rec.name = m.name;
    rec.kind = m.kind;
    rec.version = m.version;
    rec.abi = m.abi;
    rec.description = m.description;
    rec.manifest_path = manifest_path;
    auto library = detail::resolve_library(manifest_path, m.library);
    if (auto* path = std::get_if<fs::path>(&library)) rec.library_path = *path;
    rec.extensions = m.extensions;
    rec.magic = m.magic;
    rec.folders = m.folders;

    std::optional<Manifest> to_load;
    auto [winner, inserted] = winners_.emplace(m.name, manifest_path);
    if (!inserted) {
      rec.status = PluginStatus::kShadowed;
      rec.detail = "shadowed by " + winner->second.string();
    } else if (auto* outside = std::get_if<std::string>(&library)) {
      rec.status = PluginStatus::kBroken;
      rec.detail = *outside;
    } else if (check_loadable(m, rec)) {
      to_load = std::move(m);
    }
    reg_.plugins_.push_back(std::move(rec));
    reg_.deferred_->pending.push_back(std::move(to_load));
  }

  // The checks that need no loading; false with the record's final status when one fails.
  static bool check_loadable(const Manifest& m, PluginRecord& rec) {
    std::error_code ec;
    if (!fs::is_regular_file(rec.library_path, ec)) {
      rec.status = PluginStatus::kBroken;
      rec.detail = fmt::format("library {} not found (looked for {}): reinstall the plugin",
                               m.library, rec.library_path.string());
      return false;
    }
    // Probing before loading gives "unavailable, install X" instead of a loader error for a
    // plugin linked against a runtime this machine lacks.
    if (auto missing = detail::probe_requirements(m)) {
      rec.status = PluginStatus::kUnavailable;
      rec.detail = *missing;
      return false;
    }
    rec.status = PluginStatus::kAvailable;  // provisional until loaded; never shown before that
    return true;
  }

  const Options& options_;
  Registry reg_;
  std::map<std::string, fs::path> winners_;  // plugin name -> manifest that provides it
};

Registry Registry::discover(const Options& options) {
  return RegistryBuilder(options).build();
}

namespace {

bool usable(const PluginRecord& p) {
  return p.status == PluginStatus::kAvailable || p.status == PluginStatus::kCodegenOnly;
}

std::string usable_targets(const std::vector<PluginRecord>& plugins) {
  std::vector<std::string> names;
  for (const PluginRecord& p : plugins) {
    if (p.kind != "target" || !usable(p) || !p.target) continue;
    names.push_back(p.status == PluginStatus::kCodegenOnly ? p.name + " (codegen-only)" : p.name);
  }
  if (names.empty()) return "none";
  return fmt::format("{}", fmt::join(names, ", "));
}

// The targets rlx itself ships (each its own plugin and package): a name among them that is not
// installed is a missing package, not a typo.
bool is_rlx_target(const std::string& name) {
  static const std::vector<std::string> kTargets = {
      "cpu",     "cuda", "rocm",   "oneapi", "tpu",     "metal",  "mlx",     "ane",
      "hexagon", "gpu",  "vulkan", "opengl", "directx", "webgpu", "cortexm", "fpga"};
  return std::find(kTargets.begin(), kTargets.end(), name) != kTargets.end();
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::optional<PluginRecord> Registry::target_record(const std::string& name) const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  for (size_t i = 0; i < plugins_.size(); ++i) {
    if (plugins_[i].name != name || plugins_[i].kind != "target" ||
        plugins_[i].status == PluginStatus::kShadowed)
      continue;
    ensure_loaded(i);
    if (usable(plugins_[i]) && plugins_[i].target) return plugins_[i];
  }
  return std::nullopt;
}

std::shared_ptr<Target> Registry::target(const std::string& name) const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  for (size_t i = 0; i < plugins_.size(); ++i) {
    const PluginRecord& p = plugins_[i];
    if (p.name != name || p.status == PluginStatus::kShadowed) continue;
    if (p.kind == "target") {
      ensure_loaded(i);
      if (usable(p) && p.target) return p.target;
    }
    // Only an error lists the other targets, so only an error loads them all.
    const std::string others = "available targets: " + usable_targets(plugins());
    if (p.kind != "target")
      throw_user_error(fmt::format("'{}' is an {} plugin, not a target; {}", name, p.kind, others));
    std::string todo;
    switch (p.status) {
      case PluginStatus::kUnavailable:
        todo = "install what it needs, or choose another target";
        break;
      case PluginStatus::kIncompatible:
        todo = "update the plugin, or choose another target";
        break;
      default:
        todo = fmt::format("reinstall the plugin (manifest {}), or choose another target",
                           p.manifest_path.string());
    }
    throw_user_error(fmt::format("target '{}' is {}: {}\n{}; {}", name, status_name(p.status),
                                 p.detail, todo, others));
  }
  std::string message =
      is_rlx_target(name)
          ? fmt::format(
                "target '{0}' is not installed here: it is one of rlx's targets, packaged "
                "as rlx-target-{0} (or built from source where its toolchain is present); "
                "available targets: {1}",
                name, usable_targets(plugins()))
          : fmt::format("unknown target '{}'; available targets: {}", name,
                        usable_targets(plugins()));
  std::vector<std::string> names;
  for (const PluginRecord& p : plugins())
    if (p.kind == "target") names.push_back(p.name);
  if (!is_rlx_target(name))
    if (std::optional<std::string> close = closest_name(name, names))
      message += fmt::format("\ndid you mean '{}'?", *close);
  // Say why nothing was found when plugins are switched off (the note has no path).
  for (const Problem& pr : problems_)
    if (pr.path.empty()) message += "\n" + pr.message;
  message += "\nrun `rlx --list-targets` to see every plugin and its status";
  throw_user_error(std::move(message));
}

std::vector<size_t> Registry::claimants(const fs::path& path) const {
  std::error_code ec;
  auto claiming = [&](auto&& claims) {
    std::vector<size_t> out;
    for (size_t i = 0; i < plugins_.size(); ++i) {
      const PluginRecord& p = plugins_[i];
      if (p.kind == "importer" && p.status != PluginStatus::kShadowed && claims(p))
        out.push_back(i);
    }
    return out;
  };
  if (fs::is_directory(path, ec)) {
    return claiming([&](const PluginRecord& p) {
      return std::any_of(p.folders.begin(), p.folders.end(),
                         [&](const std::string& marker) { return fs::exists(path / marker, ec); });
    });
  }
  // Magic bytes first: a file's contents say more than its name.
  std::string head(64, '\0');
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    head.resize(std::fread(head.data(), 1, head.size(), f));
    std::fclose(f);
  } else {
    head.clear();
  }
  std::vector<size_t> out = claiming([&](const PluginRecord& p) {
    return std::any_of(p.magic.begin(), p.magic.end(), [&](const std::string& magic) {
      return !magic.empty() && head.compare(0, magic.size(), magic) == 0;
    });
  });
  // Suffix match rather than path.extension(), so multi-part extensions (".tar.gz") work.
  const std::string file = lower(path.filename().string());
  for (size_t i : claiming([&](const PluginRecord& p) {
         return std::any_of(p.extensions.begin(), p.extensions.end(), [&](const std::string& ext) {
           const std::string e = lower(ext);
           return file.size() > e.size() && file.compare(file.size() - e.size(), e.size(), e) == 0;
         });
       }))
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  return out;
}

std::shared_ptr<Importer> Registry::importer_for(const fs::path& path) const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  // The claims come from the manifests, so only importers that claim the file are loaded; one
  // that then fails to load (or to pass the probe) is passed over.
  for (size_t i : claimants(path)) {
    if (!usable(plugins_[i])) continue;
    ensure_loaded(i);
    if (usable(plugins_[i]) && plugins_[i].importer) return plugins_[i].importer;
  }
  return nullptr;
}

std::vector<PluginRecord> Registry::unusable_importers_for(const fs::path& path) const {
  std::lock_guard<std::recursive_mutex> hold(deferred_->lock);
  std::vector<PluginRecord> out;
  for (size_t i : claimants(path)) {
    ensure_loaded(i);
    if (!usable(plugins_[i]) || !plugins_[i].importer) out.push_back(plugins_[i]);
  }
  return out;
}

}  // namespace rlx::registry
