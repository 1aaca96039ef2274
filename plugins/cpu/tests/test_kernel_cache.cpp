// The cpu target's persistent kernel cache (RLX_CPU_KERNELS=compiled): a hit needs no compiler,
// the key covers ISA and flags, damaged entries are rebuilt, unwritable and read-only folders,
// the XDG fallback, the compiler's time limit, and two processes sharing one cache.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen_test_support.h"

extern char** environ;

namespace rlx {
namespace {

using namespace codegen_test;

TEST(CpuCodegen, SecondCompileHitsTheCacheWithoutACompiler) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path log = dir.path() / "cc.log";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "cache").string())
      .set("RLX_CC", logging_compiler(dir.path(), log).string())
      .set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_lines(log), 1);
  EXPECT_EQ(count_files(dir.path() / "cache", ".so"), 1);
  EXPECT_EQ(run_small(), kSmallWant);  // a new session: compiles the program again
  EXPECT_EQ(count_lines(log), 1) << "the second compile ran the compiler";
}

TEST(CpuCodegen, CacheKeyCoversIsaAndFlags) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string()).set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(cache, ".so"), 1);
  {
    ScopedEnv isa;
    isa.set("RLX_CPU_ISA", "baseline");
    EXPECT_EQ(run_small(), kSmallWant);
    EXPECT_EQ(count_files(cache, ".so"), 2);
  }
  {
    ScopedEnv flags;
    flags.set("RLX_CPU_CFLAGS", "-DRLX_UNUSED_MACRO=1");
    EXPECT_EQ(run_small(), kSmallWant);
    EXPECT_EQ(count_files(cache, ".so"), 3);
  }
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(cache, ".so"), 3);
}

// A cache entry damaged outside rlx (a truncated .so, as a full disk or a killed copy leaves it)
// is caught by its checksum and compiled again; mapping it would end the process with SIGBUS.
// Temporaries of a compile whose process is gone are removed.
TEST(CpuCodegen, DamagedCacheEntriesAreRebuiltNotLoaded) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache", log = dir.path() / "cc.log";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string())
      .set("RLX_CC", logging_compiler(dir.path(), log).string())
      .set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  ASSERT_EQ(count_files(cache, ".so"), 1);
  fs::path object;
  for (const auto& e : fs::directory_iterator(cache / "kernels"))
    if (e.path().extension() == ".so") object = e.path();
  const auto size = fs::file_size(object);
  fs::resize_file(object, 1000);
  pid_t gone = 0;
  char true_cmd[] = "true";
  char* argv[] = {true_cmd, nullptr};
  ASSERT_EQ(posix_spawnp(&gone, "true", nullptr, nullptr, argv, environ), 0);
  ASSERT_EQ(::waitpid(gone, nullptr, 0), gone);
  const fs::path orphan = cache / "kernels" / ("0123.tmp." + std::to_string(gone) + ".0.c");
  std::ofstream(orphan) << "left by a killed compile";

  testing::internal::CaptureStderr();
  EXPECT_EQ(run_small(), kSmallWant);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("was damaged"), std::string::npos) << err;
  EXPECT_EQ(count_lines(log), 2) << "the damaged entry was not compiled again";
  EXPECT_EQ(fs::file_size(object), size);
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_lines(log), 2) << "the rebuilt entry was not a hit";
}

// The kernels of another graph than kSmallGraph (a cache miss where kSmallGraph hits).
std::vector<double> run_other() {
  NamedTensors in = {{"x", test::f32({4}, {1, 2, 3, 4})}};
  return values(
      run_text("graph @t(%x: f32[4]) {\n  %a = mul(%x, %x) : f32[4]\n  %b = neg(%a) : f32[4]\n"
               "  return %b\n}\n",
               in)
          .at("b"));
}

std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUser) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

// A cache folder that cannot be made (its parent is a regular file, which stops root too) fails
// the compile with the folder, the reason and what to do; nothing is compiled elsewhere.
TEST(CpuCodegen, ACacheFolderThatCannotBeMadeIsAClearError) {
  REQUIRE_COMPILER();
  TempDir dir;
  std::ofstream(dir.path() / "file") << "not a folder";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "file" / "cache").string())
      .set("RLX_CPU_KERNELS", "compiled");
  const std::string e = user_error_of([] { run_small(); });
  EXPECT_NE(e.find("cannot create the kernel cache folder " +
                   (dir.path() / "file" / "cache" / "kernels").string() + " (Not a directory)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set RLX_CACHE_DIR to a writable folder"), std::string::npos) << e;
}

// A read-only cache (say one shipped with an application) still serves the kernels it holds; a
// miss fails with the folder and what to do rather than compiling somewhere else unseen.
TEST(CpuCodegen, AReadOnlyCacheServesItsKernelsAndRefusesMissesClearly) {
  REQUIRE_COMPILER();
  TempDir dir;
  const fs::path cache = dir.path() / "cache", kernels = cache / "kernels";
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", cache.string()).set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  fs::permissions(kernels, fs::perms::owner_read | fs::perms::owner_exec);
  struct Restore {
    fs::path p;
    ~Restore() { fs::permissions(p, fs::perms::owner_all); }
  } restore{kernels};
  // Root writes into read-only folders: then this cannot be tested here.
  if (std::ofstream(kernels / "probe")) {
    fs::remove(kernels / "probe");
    GTEST_SKIP() << "this process writes into a folder without write permission (root?), so a "
                    "read-only cache cannot be made here";
  }
  EXPECT_EQ(run_small(), kSmallWant) << "a hit needs no write";
  const std::string e = user_error_of([] { run_other(); });
  EXPECT_NE(e.find("the kernel cache folder " + kernels.string() + " is not writable"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("Permission denied"), std::string::npos) << e;
  EXPECT_NE(e.find("set RLX_CACHE_DIR to a writable folder"), std::string::npos) << e;
}

// Without RLX_CACHE_DIR the cache is $XDG_CACHE_HOME/rlx/kernels, else ~/.cache/rlx/kernels; an
// empty variable counts as unset.
TEST(CpuCodegen, WithoutRlxCacheDirTheCacheFollowsXdgThenHome) {
  REQUIRE_COMPILER();
  TempDir dir;
  const fs::path xdg = dir.path() / "xdg", home = dir.path() / "home";
  ScopedEnv env;
  env.unset("RLX_CACHE_DIR").set("XDG_CACHE_HOME", xdg.string()).set("HOME", home.string());
  env.set("RLX_CPU_KERNELS", "compiled");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(xdg / "rlx", ".so"), 1);
  EXPECT_FALSE(fs::exists(home));
  env.set("RLX_CACHE_DIR", "").unset("XDG_CACHE_HOME");
  EXPECT_EQ(run_small(), kSmallWant);
  EXPECT_EQ(count_files(home / ".cache" / "rlx", ".so"), 1);
}

// A compiler that does not finish within RLX_CC_TIMEOUT_S is stopped with everything it started,
// and the compile fails saying what to change.
TEST(CpuCodegen, ACompilerPastItsTimeLimitIsStoppedWithAClearError) {
  TempDir dir;
  const fs::path pid_file = dir.path() / "child.pid", script = dir.path() / "hanging-cc";
  std::ofstream(script) << fmt::format(
      "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'hanging-cc 1.0'; exit 0; fi\n"
      "sleep 1000 &\necho $! > '{}'\nwait\n",
      pid_file.string());
  fs::permissions(script, fs::perms::owner_all);
  ScopedEnv env;
  env.set("RLX_CACHE_DIR", (dir.path() / "cache").string())
      .set("RLX_CC", script.string())
      .set("RLX_CPU_KERNELS", "compiled")
      .set("RLX_CC_TIMEOUT_S", "1");
  const std::string e = user_error_of([] { run_small(); });
  EXPECT_NE(e.find("ran longer than 1 s on the generated kernels and was stopped"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set RLX_CC_TIMEOUT_S to more seconds (0 for no limit)"), std::string::npos)
      << e;
  // The compiler's own child was stopped too: gone, or a zombie nobody reaps (PID 1 in a
  // container may not).
  int child = 0;
  std::ifstream(pid_file) >> child;
  ASSERT_GT(child, 0);
  auto stopped = [&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const size_t paren = line.rfind(')');
    return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
  };
  for (int i = 0; i < 1000 && !stopped(); ++i) ::usleep(10000);
  EXPECT_TRUE(stopped()) << "the compiler's child " << child << " still runs";

  env.set("RLX_CC_TIMEOUT_S", "soon");
  EXPECT_NE(
      user_error_of([] { run_small(); }).find("RLX_CC_TIMEOUT_S=soon is not a number of seconds"),
      std::string::npos);
}

// What each of the concurrent processes runs: skipped unless a parent started it.
TEST(CpuCodegenChild, CompileAndRun) {
  if (!std::getenv("RLX_CODEGEN_CHILD")) GTEST_SKIP() << "run by ConcurrentProcessesShareTheCache";
  EXPECT_EQ(run_small(), kSmallWant);
}

TEST(CpuCodegen, ConcurrentProcessesShareTheCache) {
  REQUIRE_COMPILER();
  TempDir dir;
  fs::path cache = dir.path() / "cache", log = dir.path() / "cc.log";
  ScopedEnv env;
  // Both processes miss the cache and compile at the same time: the compiler waits for both.
  env.set("RLX_CACHE_DIR", cache.string())
      .set("RLX_CC", rendezvous_compiler(dir.path(), log, dir.path() / "barrier").string())
      .set("RLX_CPU_KERNELS", "compiled")
      .set("RLX_CODEGEN_CHILD", "1");
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=CpuCodegenChild.CompileAndRun";
  std::vector<pid_t> pids;
  for (int i = 0; i < 2; ++i) {
    char* argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ), 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a child failed";
  }
  EXPECT_EQ(count_files(cache, ".so"), 1);
  EXPECT_EQ(count_lines(log), 2) << "both processes compiled, at the same time";
  for (const auto& e : fs::directory_iterator(cache / "kernels"))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace rlx
