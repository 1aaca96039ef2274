// The members of a zip archive, for .npz input files (numpy writes them with np.savez, stored,
// and np.savez_compressed, deflated). Only what numpy writes is read: one disk, stored or
// deflated members, zip64 sizes and offsets; encrypted members and other methods are user
// errors naming the archive and member.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rlx::cli {

struct ZipMember {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint64_t compressed_size = 0, size = 0;
  uint32_t crc32 = 0;
  uint64_t data_offset = 0;  // where the member's (compressed) bytes begin in the archive
};

class ZipReader {
 public:
  // Reads the archive's central directory from `bytes`, the whole file; `path` names it in
  // every error.
  ZipReader(std::string path, std::string bytes);

  const std::vector<ZipMember>& members() const { return members_; }
  // The member's bytes, inflated where deflated and checked against its CRC-32.
  std::string read(const ZipMember& member) const;

 private:
  std::string path_;
  std::string bytes_;
  std::vector<ZipMember> members_;
};

}  // namespace rlx::cli
