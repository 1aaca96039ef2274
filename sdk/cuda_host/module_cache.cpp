#include "module_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "rlx/sdk/content_hash.h"

namespace rlx::cuda {

namespace {

namespace fs = std::filesystem;
using sdk::content_hash;

// Bumped whenever the way the host launches generated kernels changes, so an old module is never
// loaded by a new rlx.
constexpr const char* kKernelAbi = "rlx-cuda-kernels-1";

std::optional<fs::path> cache_dir(const char* folder) {
  fs::path base;
  if (const char* d = std::getenv("RLX_CACHE_DIR"); d && *d)
    base = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = fs::path(x) / "rlx";
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = fs::path(h) / ".cache" / "rlx";
  else
    return std::nullopt;
  return base / "kernels" / folder;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool write_atomically(const fs::path& path, const std::string& bytes) {
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp = path.parent_path() / fmt::format("{}.tmp.{}.{}", path.filename().string(),
                                                        ::getpid(), counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    if (!out.flush()) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

}  // namespace

CachedModule find_or_compile(const std::string& source, const std::string& arch,
                             const std::string& identity,
                             const std::function<std::string()>& compile,
                             const ModuleCacheLayout& layout) {
  CachedModule out;
  std::optional<fs::path> dir = cache_dir(layout.folder);
  const std::string key =
      content_hash(fmt::format("{}\n{}\n{}\n{}", kKernelAbi, identity, arch, source));
  if (dir) {
    out.path = *dir / (key + layout.module_ext);
    if (std::optional<std::string> bytes = read_file(out.path); bytes && !bytes->empty()) {
      out.bytes = std::move(*bytes);
      out.hit = true;
      return out;
    }
  }
  out.bytes = compile();
  std::error_code ec;
  if (dir) fs::create_directories(*dir, ec);
  // The source goes in first, for reading what ran; the module's rename makes the entry exist.
  if (!dir || !write_atomically(fs::path(out.path).replace_extension(layout.source_ext), source) ||
      !write_atomically(out.path, out.bytes)) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      std::fprintf(
          stderr,
          "rlx: %s: the kernel cache %s is not writable; kernels are compiled on every run (set "
          "RLX_CACHE_DIR to a writable folder)\n",
          layout.folder, dir ? dir->c_str() : "(HOME is unset)");
    out.path.clear();
  }
  return out;
}

void evict(const fs::path& module) {
  std::error_code ec;
  fs::remove(module, ec);
}

}  // namespace rlx::cuda
