#include "zip_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "errors.h"

namespace rlx::cli {
namespace {

// Record signatures and sizes of the zip format (PKWARE APPNOTE 6.3).
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndOfDirectorySize = 22;
constexpr size_t kZip64LocatorSize = 20;
constexpr size_t kDirectoryEntrySize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint16_t kEncryptedFlag = 0x0001;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint32_t kSaturated32 = 0xffffffff;  // "the real value is in the zip64 field"

// Little-endian fields at checked offsets: a truncated or corrupt archive is a user error, never a
// read past the end.
class Fields {
 public:
  Fields(const std::string& bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  template <class T>
  T at(uint64_t offset) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T))
      fail(fmt::format("a record at byte {} runs past the end of the file", offset));
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<T>(static_cast<uint8_t>(bytes_[offset + i])) << (8 * i);
    return v;
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw CliError(fmt::format("{} is not a readable zip (.npz) archive: {}", path_, why),
                   "write it again with numpy's np.savez or np.savez_compressed");
  }

 private:
  const std::string& bytes_;
  const std::string& path_;
};

// The end-of-central-directory record sits in the last 22 bytes plus up to 64 KiB of comment.
uint64_t find_end_of_directory(const std::string& bytes, const Fields& f) {
  if (bytes.size() < kEndOfDirectorySize) f.fail("it is shorter than a zip's end record");
  const uint64_t last = bytes.size() - kEndOfDirectorySize;
  const uint64_t first = last > 0xffff ? last - 0xffff : 0;
  for (uint64_t at = last + 1; at-- > first;)
    if (f.at<uint32_t>(at) == kEndOfDirectory) return at;
  f.fail("it has no end-of-central-directory record");
}

// Sizes and offset that a directory entry saturated at 0xffffffff are in its zip64 extra field,
// in this order, each present only when saturated.
void read_zip64_extra(const Fields& f, uint64_t extra, uint64_t extra_end, ZipMember& m,
                      uint64_t& local_offset, bool size_saturated, bool compressed_saturated,
                      bool offset_saturated) {
  while (extra + 4 <= extra_end) {
    const auto id = f.at<uint16_t>(extra);
    const auto length = f.at<uint16_t>(extra + 2);
    uint64_t field = extra + 4;
    if (field + length > extra_end) f.fail(fmt::format("'{}' has a truncated extra field", m.name));
    if (id == kZip64ExtraId) {
      auto next = [&] {
        if (field + 8 > extra + 4 + length)
          f.fail(fmt::format("'{}' has a short zip64 field", m.name));
        field += 8;
        return f.at<uint64_t>(field - 8);
      };
      if (size_saturated) m.size = next();
      if (compressed_saturated) m.compressed_size = next();
      if (offset_saturated) local_offset = next();
      return;
    }
    extra = field + length;
  }
  f.fail(fmt::format("'{}' has saturated sizes but no zip64 field", m.name));
}

std::string inflate_raw(const std::string& in, uint64_t size, const std::string& where) {
  std::string out(size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK)  // raw deflate: zip members carry no zlib header
    throw CliError(fmt::format("cannot inflate {}: zlib failed to start", where));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size)
    throw CliError(fmt::format("{} is corrupt: its deflated data does not inflate to the {} "
                               "bytes its header states",
                               where, size),
                   "write the archive again with numpy's np.savez_compressed");
  return out;
}

}  // namespace

ZipReader::ZipReader(std::string path, std::string bytes)
    : path_(std::move(path)), bytes_(std::move(bytes)) {
  const Fields f(bytes_, path_);

  const uint64_t end = find_end_of_directory(bytes_, f);
  if (f.at<uint16_t>(end + 4) != 0 || f.at<uint16_t>(end + 6) != 0)
    f.fail("it spans several disks");
  uint64_t count = f.at<uint16_t>(end + 10);
  uint64_t directory = f.at<uint32_t>(end + 16);
  if (end >= kZip64LocatorSize && f.at<uint32_t>(end - kZip64LocatorSize) == kZip64Locator) {
    const auto record = f.at<uint64_t>(end - kZip64LocatorSize + 8);
    if (f.at<uint32_t>(record) != kZip64EndOfDirectory)
      f.fail("its zip64 locator points at no zip64 end record");
    count = f.at<uint64_t>(record + 32);
    directory = f.at<uint64_t>(record + 48);
  }

  uint64_t at = directory;
  for (uint64_t i = 0; i < count; ++i) {
    if (f.at<uint32_t>(at) != kDirectoryEntry)
      f.fail(fmt::format("central directory entry {} is missing at byte {}", i, at));
    ZipMember m;
    const auto flags = f.at<uint16_t>(at + 8);
    m.method = f.at<uint16_t>(at + 10);
    m.crc32 = f.at<uint32_t>(at + 16);
    m.compressed_size = f.at<uint32_t>(at + 20);
    m.size = f.at<uint32_t>(at + 24);
    const auto name_length = f.at<uint16_t>(at + 28);
    const auto extra_length = f.at<uint16_t>(at + 30);
    const auto comment_length = f.at<uint16_t>(at + 32);
    uint64_t local = f.at<uint32_t>(at + 42);
    const uint64_t name = at + kDirectoryEntrySize;
    if (name + name_length > bytes_.size()) f.fail("a member's name runs past the end");
    m.name = bytes_.substr(name, name_length);
    const bool size_saturated = m.size == kSaturated32;
    const bool compressed_saturated = m.compressed_size == kSaturated32;
    const bool offset_saturated = local == kSaturated32;
    if (size_saturated || compressed_saturated || offset_saturated)
      read_zip64_extra(f, name + name_length, name + name_length + extra_length, m, local,
                       size_saturated, compressed_saturated, offset_saturated);
    if (flags & kEncryptedFlag)
      throw CliError(fmt::format("{}: member '{}' is encrypted", path_, m.name),
                     "write the archive without encryption (np.savez does)");
    // The local header repeats the name and has an extra field of its own length (numpy's zip64
    // headers make it longer than the directory's); the data follows both.
    if (f.at<uint32_t>(local) != kLocalHeader)
      f.fail(fmt::format("member '{}' has no local header at byte {}", m.name, local));
    m.data_offset =
        local + kLocalHeaderSize + f.at<uint16_t>(local + 26) + f.at<uint16_t>(local + 28);
    if (m.data_offset > bytes_.size() || bytes_.size() - m.data_offset < m.compressed_size)
      f.fail(fmt::format("member '{}' runs past the end of the file", m.name));
    members_.push_back(std::move(m));
    at = name + name_length + extra_length + comment_length;
  }
}

std::string ZipReader::read(const ZipMember& m) const {
  const std::string where = fmt::format("{} member '{}'", path_, m.name);
  std::string data = bytes_.substr(m.data_offset, m.compressed_size);
  if (m.method == kDeflated) {
    if (m.size > std::numeric_limits<uInt>::max() ||
        m.compressed_size > std::numeric_limits<uInt>::max())
      throw CliError(fmt::format("{} is deflated and over 4 GiB", where),
                     "save the inputs uncompressed (np.savez) or as safetensors");
    data = inflate_raw(data, m.size, where);
  } else if (m.method != kStored) {
    throw CliError(fmt::format("{} is compressed with zip method {}; rlx reads stored (0) and "
                               "deflated (8) members",
                               where, m.method),
                   "write the archive with numpy's np.savez or np.savez_compressed");
  } else if (m.size != m.compressed_size) {
    throw CliError(fmt::format("{} is stored, but its sizes differ ({} and {} bytes)", where,
                               m.size, m.compressed_size),
                   "write the archive again with numpy's np.savez");
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < data.size();) {  // crc32 takes at most 4 GiB at a time
    const size_t chunk = std::min<size_t>(data.size() - done, std::numeric_limits<uInt>::max());
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + done), static_cast<uInt>(chunk));
    done += chunk;
  }
  if (crc != m.crc32)
    throw CliError(fmt::format("{} is corrupt: its CRC-32 does not match its data", where),
                   "write the archive again");
  return data;
}

}  // namespace rlx::cli
