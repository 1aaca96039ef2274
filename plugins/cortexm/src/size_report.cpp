#include "size_report.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "c_emitter.h"
#include "rlx/core/json.h"

extern char** environ;

namespace rlx::cortexm {

namespace fs = std::filesystem;

namespace {

std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && ::access((fs::path(d) / name).c_str(), X_OK) == 0)
      return (fs::path(d) / name).string();
  return "";
}

// "arm-none-eabi-gcc" -> "arm-none-eabi-size" beside it.
std::string sibling(const std::string& gcc, const std::string& tool) {
  const std::string suffix = "gcc";
  if (gcc.size() < suffix.size()) return tool;
  return gcc.substr(0, gcc.size() - suffix.size()) + tool;
}

// The sizes arm-none-eabi-size -A prints, by section name.
void read_sections(const std::string& text, CoreSize& c) {
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::stringstream l(line);
    std::string name;
    int64_t size = 0;
    if (!(l >> name >> size)) continue;
    if (name.rfind(".text", 0) == 0)
      c.text += size;
    else if (name.rfind(".rodata", 0) == 0)
      c.rodata += size;
    else if (name.rfind(".data", 0) == 0)
      c.data += size;
    else if (name.rfind(".bss", 0) == 0)
      c.bss += size;
  }
}

// The largest frame gcc's .su file lists ("model.c:12:6:rlx_model_run\t24\tstatic").
int64_t read_stack(const fs::path& su) {
  std::ifstream in(su);
  int64_t most = 0;
  for (std::string line; std::getline(in, line);) {
    std::stringstream l(line);
    std::string where;
    int64_t bytes = 0;
    if (std::getline(l, where, '\t') && l >> bytes) most = std::max(most, bytes);
  }
  return most;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (output) output->append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string arm_gcc() {
  if (const char* named = std::getenv("RLX_ARM_GCC"); named && *named)
    return ::access(named, X_OK) == 0 ? std::string(named) : on_path(named);
  return on_path("arm-none-eabi-gcc");
}

SizeReport measure_sizes(const fs::path& dir, int64_t arena_bytes, const std::string& only) {
  SizeReport r;
  r.toolchain = arm_gcc();
  if (r.toolchain.empty()) {
    r.why_not = "arm-none-eabi-gcc is not on PATH (Debian: apt install gcc-arm-none-eabi)";
    return r;
  }
  const fs::path scratch = dir / ".cortexm-size";
  fs::create_directories(scratch);
  for (const CpuFlags& cpu : known_cpus()) {
    if (!only.empty() && cpu.cpu != only) continue;
    const fs::path obj = scratch / (cpu.cpu + ".o");
    std::vector<std::string> argv = {
        r.toolchain,      "-c", "-O2", "-std=c99", "-fstack-usage", "-ffunction-sections",
        "-fdata-sections"};
    std::stringstream flags(cpu.flags);
    for (std::string f; flags >> f;) argv.push_back(f);
    argv.insert(argv.end(), {"-I", dir.string(), (dir / "model.c").string(), "-o", obj.string()});
    std::string out;
    if (run_program(argv, &out) != 0) {
      r.why_not = fmt::format("{} failed on model.c for {}: {}", r.toolchain, cpu.cpu, out);
      r.cores.clear();
      break;
    }
    CoreSize c;
    c.cpu = cpu.cpu;
    c.arena = arena_bytes;
    std::string sizes;
    if (run_program({sibling(r.toolchain, "size"), "-A", obj.string()}, &sizes) == 0)
      read_sections(sizes, c);
    c.stack = read_stack(scratch / (cpu.cpu + ".su"));
    r.cores.push_back(c);
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return r;
}

std::string size_report_json(const SizeReport& r) {
  std::string cores;
  for (const CoreSize& c : r.cores)
    cores += fmt::format(
        "{}\n    {{\"cpu\": {}, \"text\": {}, \"rodata\": {}, \"data\": {}, \"bss\": {}, "
        "\"stack\": {}, \"arena\": {}, \"flash\": {}, \"ram\": {}}}",
        cores.empty() ? "" : ",", json::json_quote(c.cpu), c.text, c.rodata, c.data, c.bss, c.stack,
        c.arena, c.text + c.rodata + c.data, c.arena + c.stack + c.data + c.bss);
  return fmt::format("{{\n  \"toolchain\": {},\n  \"why_not\": {},\n  \"cores\": [{}\n  ]\n}}\n",
                     json::json_quote(r.toolchain), json::json_quote(r.why_not), cores);
}

}  // namespace rlx::cortexm
