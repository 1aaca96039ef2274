#include "code_object.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "rlx/core/error.h"

namespace rlx::rocm {

namespace {

constexpr std::string_view kElfMagic =
    "\x7f"
    "ELF";
constexpr uint16_t kEmAmdgpu = 224;  // e_machine at offset 18 of an ELF header
// The bundle: this magic, a u64 count, then per entry u64 offset, u64 size, u64 id length and
// the id ("hipv4-amdgcn-amd-amdhsa--gfx90a"), all little-endian.
constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

uint64_t u64_at(const std::string& b, size_t at) {
  uint64_t v = 0;
  if (at + 8 <= b.size()) std::memcpy(&v, b.data() + at, 8);
  return v;
}

bool is_amdgpu_elf(const std::string& b) {
  uint16_t machine = 0;
  if (b.size() < 20 || b.compare(0, 4, kElfMagic) != 0) return false;
  std::memcpy(&machine, b.data() + 18, 2);
  return machine == kEmAmdgpu;
}

}  // namespace

std::string code_object_for(const std::string& bytes, const std::string& arch,
                            const std::string& what) {
  if (is_amdgpu_elf(bytes)) return bytes;
  if (bytes.compare(0, kBundleMagic.size(), kBundleMagic) == 0) {
    size_t at = kBundleMagic.size();
    const uint64_t entries = u64_at(bytes, at);
    at += 8;
    for (uint64_t i = 0; i < entries && at + 24 <= bytes.size(); ++i) {
      const uint64_t offset = u64_at(bytes, at), size = u64_at(bytes, at + 8),
                     id_size = u64_at(bytes, at + 16);
      at += 24;
      if (at + id_size > bytes.size()) break;
      const std::string id = bytes.substr(at, id_size);
      at += id_size;
      // The id ends with the architecture, possibly with feature flags (gfx90a:xnack-).
      const bool amdgcn = id.find("amdgcn-amd-amdhsa") != std::string::npos;
      const size_t arch_at = id.rfind("--" + arch);
      if (amdgcn && arch_at != std::string::npos && offset + size <= bytes.size()) {
        std::string object = bytes.substr(offset, size);
        if (is_amdgpu_elf(object)) return object;
      }
    }
    throw Error(ErrorKind::kCompile,
                fmt::format("rocm: {} holds no code object for {}", what, arch));
  }
  throw Error(
      ErrorKind::kCompile,
      fmt::format("rocm: {} is neither an AMD GPU code object nor an offload bundle", what));
}

}  // namespace rlx::rocm
