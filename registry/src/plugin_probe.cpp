// The verdict on one plugin: from the cache, or from a probe whose ending is put into words a
// user can act on ("crashed with SIGSEGV while loading the library: remove or fix the plugin
// (<manifest>)").
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <deque>
#include <thread>

#include "probe.h"

namespace rlx::registry::detail {
namespace {

bool is_crash(int signal) {
  switch (signal) {
    case SIGSEGV:
    case SIGBUS:
    case SIGILL:
    case SIGFPE:
    case SIGABRT:
    case SIGTRAP:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

std::string signal_text(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", signal);
}

struct Judged {
  ProbeVerdict verdict;
  bool remember = false;  // worth keeping: the outcome is the file's, not this moment's
};

// How the helper's process ended, when it did not end well: "crashed with SIGSEGV", ...
std::string ending(const ChildOutcome& out, const ProbeReport& report,
                   const ProbeSettings& settings) {
  switch (out.end) {
    case ChildOutcome::End::kTimedOut:
      return fmt::format("did not answer within {:g} s", settings.timeout_s);
    case ChildOutcome::End::kSignaled:
      return is_crash(out.code) ? "crashed with " + signal_text(out.code)
                                : "was killed by " + signal_text(out.code);
    default:
      if (!report.error.empty() && out.code == 0)
        return fmt::format("garbled the probe's report ({})", report.error);
      return fmt::format("ended the process (exit status {})", out.code);
  }
}

Judged judge(const ChildOutcome& out, const ProbeSettings& settings, const PluginRecord& rec) {
  const ProbeReport report = parse_report(out.report);
  const bool clean = out.end == ChildOutcome::End::kExited && out.code == 0;
  Judged j;
  // The helper failed by itself: it did not start, or ended before it reached the plugin (a
  // library of rlx's own missing, say). The plugin is not to blame and nothing is remembered.
  if (out.end == ChildOutcome::End::kNotStarted) {
    j.verdict.detail = fmt::format(
        "could not be checked before loading: the plugin probe {} could not be started ({}): try "
        "again, or reinstall rlx",
        settings.helper.string(), out.error);
    return j;
  }
  if (!report.last_stage && !report.complete) {
    j.verdict.detail = fmt::format(
        "could not be checked before loading: the plugin probe {} {} before it reached the "
        "plugin: reinstall rlx",
        settings.helper.string(), ending(out, report, settings));
    return j;
  }
  // The plugin stopped the probe: what happened, in which step, and what to do.
  if (!report.complete || !clean) {
    j.verdict.abi = report.abi;
    const bool timed_out = out.end == ChildOutcome::End::kTimedOut;
    j.verdict.detail = fmt::format(
        "{} {}: remove or fix the plugin ({}){}", ending(out, report, settings),
        stage_words(report.last_stage.value_or(LoadStage::kLoading)), rec.manifest_path.string(),
        timed_out ? fmt::format(", or raise {} if it is only slow", kProbeTimeoutEnv) : "");
    // Not remembered: a time-out (a busy machine is slow once; a plugin that hangs costs the
    // wait at each command, and its row says so), or SIGKILL from outside, most often the
    // out-of-memory killer. Crashes and exits are the plugin's.
    j.remember = !timed_out && !(out.end == ChildOutcome::End::kSignaled && out.code == SIGKILL);
    return j;
  }
  // It answered: available and codegen-only pass (rlx asks can_execute() again itself, as the
  // machine may change); any other answer is final but not remembered, since it can depend on
  // the machine (a library the plugin needs, installed later).
  j.verdict.passed =
      report.status == PluginStatus::kAvailable || report.status == PluginStatus::kCodegenOnly;
  j.remember = j.verdict.passed;
  j.verdict.status = report.status;
  j.verdict.abi = report.abi;
  j.verdict.detail = report.detail;
  return j;
}

}  // namespace

std::vector<ProbeVerdict> probe_plugins(const std::vector<const PluginRecord*>& recs,
                                        const ProbeSettings& settings) {
  std::vector<ProbeVerdict> verdicts(recs.size());
  std::vector<ProbeCache> caches;
  std::deque<size_t> to_probe;
  for (size_t i = 0; i < recs.size(); ++i) {
    caches.emplace_back(settings, *recs[i]);
    if (std::optional<ProbeVerdict> known = caches[i].recall()) {
      if (!known->passed)
        known->detail += fmt::format(
            " [remembered from an earlier check of this file; delete {} to check it again]",
            caches[i].file().string());
      verdicts[i] = std::move(*known);
    } else {
      to_probe.push_back(i);
    }
  }
  // A few at a time: probes mostly wait on the loader and on drivers starting, but a hundred
  // plugins must not become a hundred processes.
  const size_t at_once = std::max(2u, std::thread::hardware_concurrency());
  std::deque<std::pair<size_t, RunningProbe>> running;
  while (!to_probe.empty() || !running.empty()) {
    while (!to_probe.empty() && running.size() < at_once) {
      const size_t i = to_probe.front();
      to_probe.pop_front();
      running.emplace_back(
          i, start_probe_child(settings, recs[i]->manifest_path, recs[i]->library_path));
    }
    auto& [i, probe] = running.front();
    Judged j = judge(finish_probe_child(probe), settings, *recs[i]);
    if (j.remember) caches[i].remember(j.verdict);
    verdicts[i] = std::move(j.verdict);
    running.pop_front();
  }
  return verdicts;
}

}  // namespace rlx::registry::detail
