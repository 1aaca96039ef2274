// Shared by the cpu target's code generation tests (test_codegen.cpp: generated kernels;
// test_kernel_cache.cpp: the persistent kernel cache): scoped environment variables and
// folders, compiler wrappers that log or rendezvous, and a small graph with its known result.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <optional>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "test_support.h"

namespace rlx::codegen_test {

namespace fs = std::filesystem;
using test::run_text;
using test::values;

// Sets environment variables for one scope and restores what was there.
class ScopedEnv {
 public:
  ScopedEnv& set(const char* name, const std::string& value) {
    save(name);
    ::setenv(name, value.c_str(), 1);
    return *this;
  }
  ScopedEnv& unset(const char* name) {
    save(name);
    ::unsetenv(name);
    return *this;
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }

 private:
  void save(const char* name) {
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "rlx-codegen-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline int count_files(const fs::path& dir, const std::string& ext) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir / "kernels"))
    n += e.path().extension() == ext && e.path().string().find(".tmp.") == std::string::npos;
  return n;
}

inline int count_lines(const fs::path& file) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// A compiler wrapper that logs each compile (not `--version`) to `log` and runs cc.
inline fs::path logging_compiler(const fs::path& dir, const fs::path& log) {
  fs::path script = dir / "logging-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\nif [ \"$1\" != --version ]; then echo run >> '{}'; fi\n"
      "exec cc \"$@\"\n",
      log.string());
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

// A compiler wrapper for two processes that must compile at the same time: each compile (not
// `--version`) logs itself to `log`, announces itself in `barrier`, and waits there until the
// other has arrived too before it runs cc. Neither can finish before both have started, however
// the machine schedules them; one that waits 120 s in vain fails, naming the barrier.
inline fs::path rendezvous_compiler(const fs::path& dir, const fs::path& log,
                                    const fs::path& barrier) {
  fs::create_directories(barrier);
  fs::path script = dir / "rendezvous-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\n"
      "if [ \"$1\" != --version ]; then\n"
      "  echo run >> '{0}'\n"
      "  : > '{1}'/$$\n"
      "  n=0\n"
      "  while [ \"$(ls '{1}' | wc -l)\" -lt 2 ]; do\n"
      "    n=$((n + 1))\n"
      "    if [ $n -gt 12000 ]; then echo 'rendezvous-cc: the other compile never came' >&2; "
      "exit 1; fi\n"
      "    sleep 0.01\n"
      "  done\n"
      "fi\n"
      "exec cc \"$@\"\n",
      log.string(), barrier.string());
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

inline bool have_compiler() {
  return std::system("cc --version > /dev/null 2>&1") == 0;
}

#define REQUIRE_COMPILER() \
  if (!have_compiler()) GTEST_SKIP() << "no C compiler (cc) on this machine"

inline constexpr const char* kSmallGraph =
    "graph @t(%x: f32[4], %y: f32[4]) {\n  %a = mul(%x, %y) : f32[4]\n  %b = add(%a, %x) : f32[4]\n"
    "  return %b\n}\n";

inline std::vector<double> run_small() {
  NamedTensors in = {{"x", test::f32({4}, {1, 2, 3, 4})}, {"y", test::f32({4}, {0.5f, -1, 2, 10})}};
  return values(run_text(kSmallGraph, in).at("b"));
}
const std::vector<double> kSmallWant = {1.5, 0, 9, 44};

}  // namespace rlx::codegen_test
