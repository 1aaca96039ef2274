// The persistent cache of compiled kernel modules: one shared object per distinct source and
// toolchain, at <cache>/kernels/<hash>.so, where <cache> is $RLX_CACHE_DIR, else
// $XDG_CACHE_HOME/rlx, else ~/.cache/rlx. A module is compiled into a temporary file of the same
// folder and renamed into place, so concurrent processes never see a partial file and at worst
// both compile it; the last rename wins with identical contents. Beside each object, <hash>.sum
// records its size and content hash, checked before the object is loaded: a damaged entry is
// compiled again (said on stderr), never mapped.
#pragma once
#include <filesystem>
#include <string>

#include "codegen_toolchain.h"
#include "rlx/sdk/content_hash.h"

namespace rlx::cpu {

std::filesystem::path kernel_cache_dir();

// The cache key (rlx/sdk/content_hash.h), shared with the cuda target's cubin cache.
using sdk::content_hash;

struct CachedObject {
  std::filesystem::path path;  // the shared object
  bool hit = false;            // found in the cache: no compiler ran
  double compiler_ms = 0;      // time spent in the compiler (0 on a hit)
  std::string repaired;        // why the entry found was damaged and rebuilt ("" when it was not)
};

// The shared object for `source` built by `tc`, compiled now unless the cache has it. The key
// covers the source, the toolchain's identity (compiler path and version, ISA, flags) and the
// cpu target's kernel ABI version. Throws rlx::Error when the folder is not writable (kUser) or
// the compiler rejects the source (kInternal: generated code must compile).
CachedObject find_or_build(const std::string& source, const Toolchain& tc);

// Forgets a cached object that failed to load (a file damaged outside rlx), so the next
// find_or_build compiles it again.
void evict(const std::filesystem::path& object);

}  // namespace rlx::cpu
