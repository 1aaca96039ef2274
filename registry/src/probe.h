// The probe: before rlx loads a plugin into its own process, a child process (rlx-plugin-probe)
// loads it the same way and reports how far it got, within a time limit. A plugin that crashes,
// hangs or ends the process there is "broken" with what happened, and rlx never maps it. The
// verdicts are remembered per plugin file (probe_cache.cpp), so a plugin is probed once, not at
// every command. docs/plugin-authors.md ("What runs where") is the user-facing account.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal.h"

namespace rlx::registry::detail {

inline constexpr double kDefaultProbeTimeoutS = 5;
inline constexpr const char* kProbeTimeoutEnv = "RLX_PLUGIN_PROBE_TIMEOUT_S";
// The helper writes its report on this descriptor; its stdout and stderr go to /dev/null, so
// what a plugin prints while probed reaches nobody.
inline constexpr int kReportFd = 3;

// How plugins are probed, settled at discovery.
struct ProbeSettings {
  std::filesystem::path helper;  // rlx-plugin-probe; empty: it is missing, load unprobed
  double timeout_s = kDefaultProbeTimeoutS;
  std::filesystem::path cache_dir;  // where verdicts are kept; empty: nowhere
};

// The settings for this process; problems worth listing (the helper is missing, the timeout
// variable is not a number) are appended to `problems` when `plugins_to_load`.
ProbeSettings probe_settings(const Options& options, bool plugins_to_load,
                             std::vector<Problem>& problems);

// The helper installed beside the registry library (build tree and install prefix alike).
std::filesystem::path installed_probe_helper();

struct ProbeVerdict {
  bool passed = false;  // it loaded and answered: load it in rlx; otherwise the rest is final
  PluginStatus status = PluginStatus::kBroken;
  std::string detail, abi;
};

// The verdicts on plugins whose manifests passed discovery, in order: remembered, or probed now,
// several at a time.
std::vector<ProbeVerdict> probe_plugins(const std::vector<const PluginRecord*>& recs,
                                        const ProbeSettings& settings);

// Records, the framing of the helper's report and of a cache file: "<tag> <length>\n<bytes>\n",
// so any bytes (a detail with newlines) pass unchanged.
std::string encode_record(std::string_view tag, std::string_view value);
// The records in `bytes`, in order; `error` says why reading stopped early (empty: it did not).
std::vector<std::pair<std::string, std::string>> decode_records(std::string_view bytes,
                                                                std::string& error);

// The status status_name() spells `name`, or nullopt.
std::optional<PluginStatus> status_named(std::string_view name);

// What the helper said before it ended.
struct ProbeReport {
  std::optional<LoadStage> last_stage;  // the step it was in when it stopped
  bool complete = false;                // its result arrived whole
  PluginStatus status = PluginStatus::kBroken;
  std::string abi, version, detail;
  std::string error;  // why the report could not be read; empty when it could
};
ProbeReport parse_report(std::string_view bytes);

// How the helper's process ended.
struct ChildOutcome {
  enum class End { kExited, kSignaled, kTimedOut, kNotStarted } end = End::kNotStarted;
  int code = 0;        // exit status, or signal number
  std::string report;  // the bytes it wrote on kReportFd
  std::string error;   // kNotStarted: why
};
// A probe started and not yet waited for. Several run at once (a listing probes every plugin);
// each has its own deadline from its start, and reports are small enough for the pipe to hold.
struct RunningProbe {
  pid_t pid = -1;  // -1: not started, `out` says why
  int report_fd = -1;
  std::chrono::steady_clock::time_point deadline;
  ChildOutcome out;
};
RunningProbe start_probe_child(const ProbeSettings& settings, const std::filesystem::path& manifest,
                               const std::filesystem::path& library);
// Waits until it ends or its deadline passes (then kills it); never throws.
ChildOutcome finish_probe_child(RunningProbe& probe);

// The verdicts kept on disk, one file per plugin, valid while the plugin's files, the helper and
// the host ABI are unchanged.
class ProbeCache {
 public:
  ProbeCache(const ProbeSettings& settings, const PluginRecord& rec);
  std::optional<ProbeVerdict> recall() const;
  void remember(const ProbeVerdict& verdict) const;  // failures to write are ignored
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;  // empty: no cache folder
  std::string key_;             // empty: a file could not be read, nothing is cached
  std::string seen_;            // the files' stamps with inode and change time (probe_cache.cpp)
  std::map<std::string, std::string> stored_;  // the cache file's records, by tag
};

// The body of rlx-plugin-probe: `rlx-plugin-probe MANIFEST LIBRARY`, report on kReportFd (on
// stdout when run by hand).
int probe_main(int argc, char** argv);

}  // namespace rlx::registry::detail
