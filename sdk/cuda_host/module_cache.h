// The persistent cache of compiled GPU modules (CUDA cubins, HIP code objects): one module per
// distinct source, architecture and compiler version, at <cache>/kernels/<folder>/<hash><ext> with
// its source beside it (cuda: kernels/cuda/<hash>.cubin and <hash>.cu), where <cache> is the cpu
// target's kernel cache root ($RLX_CACHE_DIR, else $XDG_CACHE_HOME/rlx, else
// ~/.cache/rlx). An entry is written to a temporary name and renamed into place, so concurrent
// processes never read a partial file. A module is read into memory before the driver sees it, so
// a damaged entry fails to load (never maps a short file): the caller evicts it and compiles again.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace rlx::cuda {

// Where a kind of module lives in the cache.
struct ModuleCacheLayout {
  const char* folder;      // "cuda": <cache>/kernels/cuda
  const char* module_ext;  // ".cubin"
  const char* source_ext;  // ".cu"
};
inline constexpr ModuleCacheLayout kCubins{"cuda", ".cubin", ".cu"};

struct CachedModule {
  std::string bytes;
  std::filesystem::path path;
  bool hit = false;  // found in the cache: the compiler did not run
};

// The module of `source` for `arch`, from the cache or from `compile` (stored then). `identity`
// names the compiler (its version, options and headers), so a new compiler never reuses an old
// entry. A
// cache folder that cannot be written is not an error: the module is still compiled and used,
// and said once on stderr.
CachedModule find_or_compile(const std::string& source, const std::string& arch,
                             const std::string& identity,
                             const std::function<std::string()>& compile,
                             const ModuleCacheLayout& layout = kCubins);

// Forgets an entry the driver could not load.
void evict(const std::filesystem::path& module);

}  // namespace rlx::cuda
