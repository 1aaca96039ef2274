#include "rlx/sdk/content_hash.h"

#include <fmt/format.h>

#include <cstdint>

namespace rlx::sdk {
namespace {

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

std::string content_hash(const std::string& text) {
  return fmt::format("{:016x}{:016x}", fnv1a(text, 0xcbf29ce484222325ULL),
                     fnv1a(text, 0x84222325cbf29ce4ULL));
}

}  // namespace rlx::sdk
