#include "codegen_toolchain.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "rlx/core/error.h"

extern char** environ;

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// A name with a slash is a path; otherwise the first executable of that name on PATH.
std::string resolve(const std::string& name) {
  if (name.find('/') != std::string::npos)
    return executable_file(name) ? fs::absolute(name).lexically_normal().string() : "";
  std::stringstream path(env("PATH"));
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && executable_file(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  return "";
}

// `cc --version` runs once per compiler and process: a warm compile must not pay for a process.
std::string version_of(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mu);
  auto it = known.find(compiler);
  if (it != known.end()) return it->second;
  std::string out;
  int rc = run_command({compiler, "--version"}, &out);
  std::string first = out.substr(0, out.find('\n'));
  if (rc != 0 || first.empty()) first = "";
  return known.emplace(compiler, first).first->second;
}

std::vector<std::string> split_flags(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// -O3 with the host's vector ISA; -ffp-contract=off keeps a * b + c two roundings like the
// interpreter and the reference (an FMA would change the last bit); -fno-math-errno lets sqrt and
// rounding become instructions without changing any result (kernels never read errno). No
// -ffast-math: it would reorder float sums and drop NaN handling, which the renderer defines.
std::vector<std::string> base_flags(const std::string& isa) {
  std::vector<std::string> f = {"-std=c11", "-O3",          "-fPIC", "-shared",
                                "-w",       "-fno-math-errno", "-ffp-contract=off",
                                "-fno-semantic-interposition"};
  if (isa != "baseline") f.push_back("-march=" + isa);
  return f;
}

}  // namespace

int isa_rank(const std::string& isa) {
  if (isa == "x86-64-v4") return 2;
  if (isa == "x86-64-v3") return 1;
  if (isa == "baseline") return 0;
  return -1;
}

std::string host_isa() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2"))
    return "x86-64-v3";
#endif
  return "baseline";
}

std::string Toolchain::identity() const {
  std::string s = compiler + "\n" + version + "\n" + isa + "\n";
  for (const auto& f : flags) s += f + " ";
  return s;
}

std::string Toolchain::describe() const {
  return fmt::format("{} ({}), {}", version.empty() ? "unknown compiler" : version, compiler, isa);
}

KernelPlan choose_kernel_plan() {
  std::string mode = env("RLX_CPU_KERNELS");
  if (mode.empty()) mode = "auto";
  if (mode != "auto" && mode != "compiled" && mode != "interpret")
    throw_user_error(fmt::format(
        "RLX_CPU_KERNELS={} is not a kernel mode: use compiled, interpret or auto", mode));
  KernelPlan plan;
  if (mode == "interpret") {
    plan.note = "kernels interpreted (RLX_CPU_KERNELS=interpret)";
    return plan;
  }
  std::string asked = env("RLX_CC");
  std::string compiler;
  for (const std::string& name :
       asked.empty() ? std::vector<std::string>{"cc", "gcc", "clang"} : std::vector{asked}) {
    compiler = resolve(name);
    if (!compiler.empty()) break;
  }
  if (compiler.empty()) {
    std::string why = asked.empty() ? "no C compiler found (cc, gcc, clang on PATH)"
                                    : fmt::format("RLX_CC={} is not an executable", asked);
    if (mode == "compiled")
      throw_user_error(fmt::format("cpu: RLX_CPU_KERNELS=compiled, but {}: install gcc, set "
                                   "RLX_CC, or use RLX_CPU_KERNELS=interpret",
                                   why));
    plan.note = fmt::format("kernels interpreted: {} (install gcc)", why);
    return plan;
  }
  std::string host = host_isa();
  std::string isa = env("RLX_CPU_ISA");
  if (isa.empty()) isa = host;
  if (isa_rank(isa) < 0)
    throw_user_error(
        fmt::format("RLX_CPU_ISA={} is not an ISA level: use x86-64-v4, x86-64-v3 or baseline", isa));
  if (isa_rank(isa) > isa_rank(host))
    throw_user_error(fmt::format(
        "RLX_CPU_ISA={} asks for more than this CPU runs: use {} or lower", isa, host));
  plan.mode = KernelMode::kCompiled;
  plan.toolchain.compiler = compiler;
  plan.toolchain.version = version_of(compiler);
  plan.toolchain.isa = isa;
  plan.toolchain.flags = base_flags(isa);
  for (auto& f : split_flags(env("RLX_CPU_CFLAGS"))) plan.toolchain.flags.push_back(f);
  plan.note = "kernels compiled by " + plan.toolchain.describe();
  return plan;
}

int compile_timeout_s() {
  const std::string text = env("RLX_CC_TIMEOUT_S");
  if (text.empty()) return kDefaultCompileTimeoutS;
  int v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw_user_error(fmt::format(
        "RLX_CC_TIMEOUT_S={} is not a number of seconds: use a whole number (0 for no limit)",
        text));
  return v;
}

int run_command(const std::vector<std::string>& argv, std::string* output, int timeout_s) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  // A compiler driver runs the compiler proper as a child: in a process group of their own, a
  // time-out stops both.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (timeout_s > 0) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (err != 0) {
    ::close(pipe_fds[0]);
    return -1;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    if (timeout_s > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd p{pipe_fds[0], POLLIN, 0};
      const int ready = left > 0 ? ::poll(&p, 1, static_cast<int>(left)) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        timed_out = true;
        ::kill(-pid, SIGKILL);
        break;
      }
    }
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (output) output->append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (timed_out) return kTimedOut;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace rlx::cpu
