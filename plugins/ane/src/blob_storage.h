// The weights file of an ML Program package (weights/weight.bin), in CoreML's blob storage
// format version 2: a 64-byte header (blob count, version), then per blob a 64-byte metadata
// record (sentinel 0xDEADBEEF, element type, byte size, data offset) and its data, each at a
// 64-byte boundary. A const op names a blob by the offset of its metadata record.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace rlx::ane {

// The blob element types rlx writes (the format's own numbering).
enum class BlobType : uint32_t { kF16 = 1, kF32 = 2, kI8 = 4, kI32 = 14 };

class BlobStorage {
 public:
  BlobStorage();
  // Appends `bytes` bytes of `type` and returns the offset const ops refer to.
  uint64_t add(BlobType type, const void* data, size_t bytes);
  size_t count() const { return count_; }
  void write(const std::filesystem::path& file) const;

 private:
  void align();

  std::vector<uint8_t> bytes_;
  uint32_t count_ = 0;
};

}  // namespace rlx::ane
