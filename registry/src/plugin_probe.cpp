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

// The plugin did not answer the probe: what happened, in which step, and what to do.
Judged abnormal(const std::string& what, const ProbeReport& report, const PluginRecord& rec,
                std::string_view todo_extra = {}) {
  Judged j;
  j.verdict.status = PluginStatus::kBroken;
  const std::string_view where =
      report.last_stage ? stage_words(*report.last_stage) : "before it reached the plugin";
  j.verdict.detail = fmt::format("{} {}: remove or fix the plugin ({}){}", what, where,
                                 rec.manifest_path.string(), todo_extra);
  j.verdict.abi = report.abi;
  return j;
}

Judged judge(const ChildOutcome& out, const ProbeSettings& settings, const PluginRecord& rec) {
  ProbeReport report = parse_report(out.report);
  using End = ChildOutcome::End;
  switch (out.end) {
    case End::kNotStarted: {
      Judged j;  // not remembered: the next command tries again
      j.verdict.detail = fmt::format(
          "could not be checked before loading: cannot start {}: {}; try again, or reinstall rlx",
          settings.helper.string(), out.error);
      return j;
    }
    case End::kTimedOut: {
      // Not remembered: a busy machine can be slow once; a plugin that hangs costs the wait at
      // each command, and its row says so.
      return abnormal(fmt::format("did not answer within {:g} s", settings.timeout_s), report, rec,
                      fmt::format(", or raise {} if it is only slow", kProbeTimeoutEnv));
    }
    case End::kSignaled: {
      const std::string what = is_crash(out.code) ? "crashed with " + signal_text(out.code)
                                                  : "was killed by " + signal_text(out.code);
      Judged j = abnormal(what, report, rec);
      // SIGKILL from outside is most often the out-of-memory killer, a matter of the moment.
      j.remember = out.code != SIGKILL;
      return j;
    }
    case End::kExited:
      break;
  }
  if (!report.complete || out.code != 0) {
    Judged j = abnormal(report.complete || report.error.empty()
                            ? fmt::format("ended the process (exit status {})", out.code)
                            : fmt::format("garbled the probe's report ({})", report.error),
                        report, rec);
    j.remember = true;
    return j;
  }
  // It answered: available and codegen-only pass (rlx asks can_execute() again itself, as the
  // machine may change); any other answer is final but not remembered, since it can depend on
  // the machine (a library the plugin needs, installed later).
  Judged j;
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
