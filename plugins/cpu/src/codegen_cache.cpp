#include "codegen_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>

#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

// Bumped whenever the calling convention of generated kernels or the host's use of them changes,
// so an old module is never loaded by a new rlx.
constexpr const char* kKernelAbi = "rlx-cpu-kernels-1";

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

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

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out)
    throw_user_error(fmt::format(
        "cpu: cannot write {} for the kernel cache: set RLX_CACHE_DIR to a writable folder",
        path.string()));
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

std::string content_hash(const std::string& text) {
  return fmt::format("{:016x}{:016x}", fnv1a(text, 0xcbf29ce484222325ULL),
                     fnv1a(text, 0x84222325cbf29ce4ULL));
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
    out.hit = true;
    return out;
  }

  const fs::path src = temporary_beside(out.path, ".c");
  const fs::path obj = temporary_beside(out.path, ".so");
  write_text(src, source);
  std::vector<std::string> argv = {tc.compiler};
  argv.insert(argv.end(), tc.flags.begin(), tc.flags.end());
  argv.insert(argv.end(), {"-o", obj.string(), src.string()});
  auto t0 = std::chrono::steady_clock::now();
  std::string log;
  int rc = run_command(argv, &log);
  out.compiler_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc != 0 || !fs::exists(obj, ec)) {
    fs::remove(obj, ec);
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw_internal_error(fmt::format(
        "cpu: the C compiler failed on generated kernels (exit {}); source kept at {}\n"
        "command: {}\n{}",
        rc, src.string(), cmd, log.substr(0, 4000)));
  }
  // rename() replaces atomically: a reader sees the old file or the whole new one.
  fs::rename(obj, out.path, ec);
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
}

}  // namespace rlx::cpu
