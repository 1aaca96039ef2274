// The key of a plugin's on-disk cache of built kernels (the cpu target's shared objects, the
// cuda target's cubins): a 128-bit hash of the text they were built from, as 32 hex digits. Two
// FNV-1a-64 lanes with different seeds: fast, stable across machines and rlx versions, and wide
// enough that distinct kernel sources do not meet by accident (it is not a defence against
// crafted collisions; a cache folder is trusted like the plugin itself).
#pragma once
#include <string>

namespace rlx::sdk {

std::string content_hash(const std::string& text);

}  // namespace rlx::sdk
