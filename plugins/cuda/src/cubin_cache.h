// The persistent cache of compiled CUDA modules: one cubin per distinct source, architecture and
// NVRTC version, at <cache>/kernels/cuda/<hash>.cubin with its source beside it (<hash>.cu), where
// <cache> is the cpu target's kernel cache root ($RLX_CACHE_DIR, else $XDG_CACHE_HOME/rlx, else
// ~/.cache/rlx). An entry is written to a temporary name and renamed into place, so concurrent
// processes never read a partial file. A cubin is read into memory before the driver sees it, so
// a damaged entry fails to load (never maps a short file): the caller evicts it and compiles again.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

namespace rlx::cuda {

struct CachedCubin {
  std::string bytes;
  std::filesystem::path path;
  bool hit = false;  // found in the cache: NVRTC did not run
};

// The cubin of `source` for `arch`, from the cache or from `compile` (stored then). `identity`
// names the compiler (its version and options), so a new NVRTC never reuses an old entry. A
// cache folder that cannot be written is not an error: the module is still compiled and used,
// and said once on stderr.
CachedCubin find_or_compile(const std::string& source, const std::string& arch,
                            const std::string& identity,
                            const std::function<std::string()>& compile);

// Forgets an entry the driver could not load.
void evict(const std::filesystem::path& cubin);

}  // namespace rlx::cuda
