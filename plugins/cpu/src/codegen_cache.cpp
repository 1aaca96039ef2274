#include "codegen_cache.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "rlx/core/error.h"
#include "rlx/core/progress.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

// Bumped whenever the calling convention of generated kernels or the host's use of them changes,
// so an old module is never loaded by a new rlx.
constexpr const char* kKernelAbi = "rlx-cpu-kernels-1";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A name no other process or thread uses at the same time.
fs::path temporary_beside(const fs::path& target, const char* suffix) {
  static std::atomic<uint64_t> counter{0};
  return target.parent_path() / fmt::format("{}.tmp.{}.{}{}", target.stem().string(), ::getpid(),
                                            counter.fetch_add(1), suffix);
}

// A cache that cannot be written is an error, not a reason to compile into a private folder: a
// read-only cache still serves its hits, and a miss says which folder and what to do.
void write_text(const fs::path& path, const std::string& text) {
  errno = 0;
  std::ofstream out(path, std::ios::binary);
  const int open_errno = errno;
  if (!out)
    throw_user_error(
        fmt::format("cpu: the kernel cache folder {} is not writable (cannot create {}: {}): set "
                    "RLX_CACHE_DIR to a writable folder",
                    path.parent_path().string(), path.filename().string(),
                    open_errno ? std::strerror(open_errno) : "unknown reason"));
  out << text;
  out.close();
  if (!out)
    throw_user_error(fmt::format(
        "cpu: cannot write {} in the kernel cache (is the disk full?): free space, or set "
        "RLX_CACHE_DIR to another folder",
        path.string()));
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// What a cache entry's .sum file records: its object's size and content hash. A truncated or
// altered object (a full disk, a killed copy, another program) is caught before dlopen maps it:
// a short file mapped and called dies with SIGBUS, which no error handling can catch.
std::string object_digest(const std::string& bytes) {
  return fmt::format("{} {}\n", bytes.size(), content_hash(bytes));
}

// Whether the entry's object still has the bytes recorded when it was written; the reason when not.
std::optional<std::string> damage_of(const fs::path& object) {
  std::optional<std::string> bytes = read_file(object);
  if (!bytes) return "it cannot be read";
  std::optional<std::string> sum = read_file(fs::path(object).replace_extension(".sum"));
  if (!sum) return "it has no checksum (.sum) beside it";
  if (*sum != object_digest(*bytes))
    return fmt::format("it holds {} bytes that do not match its checksum ({})", bytes->size(),
                       sum->substr(0, sum->find('\n')));
  return std::nullopt;
}

// Removes the temporaries of compiles whose process is gone (killed mid-compile): names
// <hash>.tmp.<pid>.<n>.<ext>. On every miss: beside a compiler run, reading a folder is free.
void remove_orphaned_temporaries(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.find(".tmp.");
    if (at == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + at + 5, nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    fs::remove(it->path(), ignored);
  }
}

}  // namespace

fs::path kernel_cache_dir() {
  fs::path base;
  if (std::string d = env("RLX_CACHE_DIR"); !d.empty()) base = d;
  else if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) base = fs::path(x) / "rlx";
  else if (std::string h = env("HOME"); !h.empty()) base = fs::path(h) / ".cache" / "rlx";
  else
    throw_user_error(
        "cpu: no folder for the kernel cache (HOME is unset): set RLX_CACHE_DIR to a writable "
        "folder");
  return base / "kernels";
}

CachedObject find_or_build(const std::string& source, const Toolchain& tc) {
  const fs::path dir = kernel_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir))
    throw_user_error(fmt::format(
        "cpu: cannot create the kernel cache folder {}{}: set RLX_CACHE_DIR to a writable folder",
        dir.string(), ec ? " (" + ec.message() + ")" : ""));
  const std::string key = content_hash(std::string(kKernelAbi) + "\n" + tc.identity() + "\n" + source);
  CachedObject out;
  out.path = dir / (key + ".so");
  if (fs::exists(out.path, ec)) {
    std::optional<std::string> damage = damage_of(out.path);
    if (!damage) {
      out.hit = true;
      return out;
    }
    // Said once on stderr, not thrown: the entry is rebuilt and the run goes on correctly.
    std::fprintf(stderr, "rlx: cpu: the kernel cache entry %s was damaged (%s); compiling it again\n",
                 out.path.c_str(), damage->c_str());
    out.repaired = *damage;
    evict(out.path);
  }
  remove_orphaned_temporaries(dir);

  const fs::path src = temporary_beside(out.path, ".c");
  const fs::path obj = temporary_beside(out.path, ".so");
  write_text(src, source);
  std::vector<std::string> argv = {tc.compiler};
  argv.insert(argv.end(), tc.flags.begin(), tc.flags.end());
  argv.insert(argv.end(), {"-o", obj.string(), src.string()});
  const int timeout_s = compile_timeout_s();
  auto t0 = std::chrono::steady_clock::now();
  std::string log;
  int rc = 0;
  {
    progress::Task task(fmt::format("cpu: compiling the generated kernels with {}",
                                    fs::path(tc.compiler).filename().string()));
    rc = run_command(argv, &log, timeout_s);
  }
  out.compiler_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc == kTimedOut) {
    fs::remove(obj, ec);
    throw_user_error(fmt::format(
        "cpu: the C compiler ({}) ran longer than {} s on the generated kernels and was stopped; "
        "source kept at {}: set RLX_CC_TIMEOUT_S to more seconds (0 for no limit), or use "
        "RLX_CPU_KERNELS=interpret",
        tc.compiler, timeout_s, src.string()));
  }
  if (rc != 0 || !fs::exists(obj, ec)) {
    fs::remove(obj, ec);
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw_internal_error(fmt::format(
        "cpu: the C compiler failed on generated kernels (exit {}); source kept at {}\n"
        "command: {}\n{}",
        rc, src.string(), cmd, log.substr(0, 4000)));
  }
  // The checksum goes in first, then the object: a reader that sees the object sees its sum.
  // rename() replaces atomically: a reader sees the old file or the whole new one.
  std::optional<std::string> built = read_file(obj);
  if (!built) throw_internal_error(fmt::format("cpu: cannot read back the compiled kernels {}", obj.string()));
  const fs::path sum = temporary_beside(out.path, ".sum");
  write_text(sum, object_digest(*built));
  fs::rename(sum, fs::path(out.path).replace_extension(".sum"), ec);
  if (!ec) fs::rename(obj, out.path, ec);
  if (ec) {
    fs::remove(obj, ec);
    throw_user_error(fmt::format("cpu: cannot install {} in the kernel cache: {}",
                                 out.path.string(), ec.message()));
  }
  // The source stays beside its object, for reading what ran.
  fs::rename(src, fs::path(out.path).replace_extension(".c"), ec);
  if (ec) fs::remove(src, ec);
  return out;
}

void evict(const fs::path& object) {
  std::error_code ec;
  fs::remove(object, ec);
  fs::remove(fs::path(object).replace_extension(".sum"), ec);
}

}  // namespace rlx::cpu
