// Runs rlx-plugin-probe on one plugin and collects its report, within the time limit. The helper
// is a separate executable started with posix_spawn, not a fork of rlx: rlx may already run
// oneTBB worker threads, and loading libraries in a forked copy of a threaded process can
// deadlock on locks another thread held (docs/decisions.md 26).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "probe.h"

extern char** environ;

namespace rlx::registry::detail {
namespace {

// A plugin could write without end; what a report needs is a few hundred bytes.
constexpr size_t kMaxReportBytes = size_t{1} << 20;

class SpawnSetup {
 public:
  explicit SpawnSetup(int report_write_fd) {
    posix_spawn_file_actions_init(&files_);
    posix_spawn_file_actions_addopen(&files_, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files_, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files_, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&files_, report_write_fd, kReportFd);
    posix_spawnattr_init(&attr_);
    // Its own process group, so a timeout also ends whatever the plugin started; default signal
    // handling and an empty mask, whatever rlx's embedder set up.
    posix_spawnattr_setflags(
        &attr_, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr_, 0);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr_, &none);
    posix_spawnattr_setsigdefault(&attr_, &all);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&files_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  const posix_spawn_file_actions_t* files() const { return &files_; }
  const posix_spawnattr_t* attr() const { return &attr_; }

 private:
  posix_spawn_file_actions_t files_;
  posix_spawnattr_t attr_;
};

void append_available(int fd, std::string& out, bool& eof) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      if (out.size() < kMaxReportBytes)
        out.append(buf, std::min(static_cast<size_t>(n), kMaxReportBytes - out.size()));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) eof = true;
    return;  // EOF, or nothing more for now (the descriptor is non-blocking)
  }
}

// Whether the child has ended, without reaping it: its pid (and so its process group id) stays
// reserved until waitpid, so the group can still be killed safely. `gone`: an embedder that
// ignores SIGCHLD had it reaped by the kernel, and its pid may already be someone else's.
bool has_ended(pid_t pid, bool& gone) {
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    gone = errno == ECHILD;
    return gone;
  }
  return info.si_pid == pid;
}

}  // namespace

RunningProbe start_probe_child(const ProbeSettings& settings, const std::filesystem::path& manifest,
                               const std::filesystem::path& library) {
  RunningProbe probe;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    probe.out.error = std::strerror(errno);
    return probe;
  }
  // dup2 onto the same number would keep O_CLOEXEC and the helper would start without it.
  if (fds[1] == kReportFd) {
    int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, kReportFd + 1);
    close(fds[1]);
    fds[1] = moved;
  }
  std::string helper = settings.helper.string(), m = manifest.string(), l = library.string();
  char* argv[] = {helper.data(), m.data(), l.data(), nullptr};
  int rc;
  {
    SpawnSetup setup(fds[1]);
    rc = fds[1] < 0
             ? errno
             : posix_spawn(&probe.pid, helper.c_str(), setup.files(), setup.attr(), argv, environ);
  }
  if (fds[1] >= 0) close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    probe.pid = -1;
    probe.out.error = std::strerror(rc);
    return probe;
  }
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  probe.report_fd = fds[0];
  probe.deadline = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(settings.timeout_s));
  return probe;
}

ChildOutcome finish_probe_child(RunningProbe& probe) {
  ChildOutcome& out = probe.out;
  if (probe.pid < 0) return out;  // never started: out says why
  const int fd = probe.report_fd;
  bool eof = false, timed_out = false, gone = false;
  while (!has_ended(probe.pid, gone)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        probe.deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    // Until the report's end the pipe wakes us; after it (the helper is exiting) short naps.
    pollfd p{fd, POLLIN, 0};
    int wait_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, eof ? 2 : 50));
    if (poll(eof ? nullptr : &p, eof ? 0 : 1, wait_ms) > 0) append_available(fd, out.report, eof);
  }
  // The whole group: what the plugin started goes with it, whether it answered or not.
  int status = 0;
  bool reaped = false;
  if (!gone) {
    kill(-probe.pid, SIGKILL);
    reaped = waitpid(probe.pid, &status, 0) == probe.pid;
  }
  append_available(fd, out.report, eof);
  close(fd);
  probe.pid = -1;
  if (timed_out) {
    out.end = ChildOutcome::End::kTimedOut;
  } else if (reaped && WIFSIGNALED(status)) {
    out.end = ChildOutcome::End::kSignaled;
    out.code = WTERMSIG(status);
  } else {
    out.end = ChildOutcome::End::kExited;
    out.code = reaped && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  }
  return out;
}

}  // namespace rlx::registry::detail
