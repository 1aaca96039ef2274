#include "blob_storage.h"

#include <cstring>
#include <fstream>

#include "rlx/core/error.h"

namespace rlx::ane {

namespace {

constexpr size_t kAlignment = 64;
constexpr uint32_t kVersion = 2;
constexpr uint32_t kSentinel = 0xDEADBEEF;

template <typename T>
void put(std::vector<uint8_t>& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);  // little-endian hosts only, as the format is
}

}  // namespace

BlobStorage::BlobStorage() : bytes_(kAlignment, 0) {
  put<uint32_t>(bytes_, 4, kVersion);
}

void BlobStorage::align() {
  bytes_.resize((bytes_.size() + kAlignment - 1) / kAlignment * kAlignment, 0);
}

uint64_t BlobStorage::add(BlobType type, const void* data, size_t bytes) {
  align();
  const uint64_t meta = bytes_.size();
  bytes_.resize(meta + kAlignment, 0);
  const uint64_t at = bytes_.size();
  put<uint32_t>(bytes_, meta, kSentinel);
  put<uint32_t>(bytes_, meta + 4, static_cast<uint32_t>(type));
  put<uint64_t>(bytes_, meta + 8, bytes);
  put<uint64_t>(bytes_, meta + 16, at);
  bytes_.resize(at + bytes);
  if (bytes) std::memcpy(bytes_.data() + at, data, bytes);
  put<uint32_t>(bytes_, 0, ++count_);
  return meta;
}

void BlobStorage::write(const std::filesystem::path& file) const {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes_.data()),
            static_cast<std::streamsize>(bytes_.size()));
  if (!out) throw_user_error("ane: cannot write " + file.string());
}

}  // namespace rlx::ane
