#include "rlx/core/safetensors.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "rlx/core/json.h"
#include "rlx/core/error.h"

namespace rlx {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is copied without byte swapping");

// The reference reader's limit (MAX_HEADER_SIZE in safetensors/src/tensor.rs).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct FormatDType {
  std::string_view name;
  DType dtype;
};
constexpr FormatDType kFormatDTypes[] = {
    {"BOOL", DType::kBool}, {"U8", DType::kU8},   {"I8", DType::kI8},   {"I16", DType::kI16},
    {"I32", DType::kI32},   {"I64", DType::kI64}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
    {"F32", DType::kF32},   {"F64", DType::kF64}, {"C64", DType::kC64}, {"U16", DType::kU16},
    {"U32", DType::kU32},   {"U64", DType::kU64},
};
// Defined by the format, but rlx has no element type for them yet.
constexpr std::string_view kUnsupportedDTypes[] = {
    "F4",          "F6_E2M3",     "F6_E3M2",     "F8_E5M2",
    "F8_E4M3",     "F8_E8M0",     "F8_E4M3FNUZ", "F8_E5M2FNUZ",
};

std::string_view format_name(DType t) {
  for (const auto& f : kFormatDTypes)
    if (f.dtype == t) return f.name;
  throw_internal_error(fmt::format("no safetensors name for dtype {}", dtype_name(t)));
}

// Private mapping of a whole file, read-only unless copy_on_write; unmapped when destroyed.
class MappedFile {
 public:
  // `copy_on_write`: pages may be written, privately (never to the file), so tensors viewing
  // the mapping behave like ordinary writable tensors.
  explicit MappedFile(const std::filesystem::path& path, bool copy_on_write = false) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_user_error(fmt::format("{}: cannot open: {}", path.string(), errno_str()));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      std::string why = S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file";
      ::close(fd);
      throw_user_error(fmt::format("{}: cannot read: {}", path.string(), why));
    }
    size_ = static_cast<size_t>(st.st_size);
    identity_ = {st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    if (size_ > 0) {
      int prot = copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ;
      void* p = ::mmap(nullptr, size_, prot, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        std::string why = errno_str();
        ::close(fd);
        throw_user_error(fmt::format("{}: cannot map: {}", path.string(), why));
      }
      data_ = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  // Device, inode, size and modification time when mapped: whether a path still names this file.
  using Identity = std::tuple<dev_t, ino_t, off_t, time_t, long>;
  const Identity& identity() const { return identity_; }

 private:
  static std::string errno_str() { return std::strerror(errno); }
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  Identity identity_{};
};

struct Entry {
  std::string name;
  DType dtype;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;
};

class HeaderReader {
 public:
  explicit HeaderReader(const std::filesystem::path& path) : path_(path.string()) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw_user_error(fmt::format("{}: {}", path_, what));
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail(fmt::format("tensor '{}': {}", tensor, what));
  }

  std::vector<Entry> entries(const json::Value& header) const {
    const json::Object* root = header.as_object();
    if (!root) fail(fmt::format("header must be a JSON object, not {}", header.kind()));
    std::vector<Entry> out;
    std::set<std::string_view> seen;
    for (const auto& [key, value] : *root) {
      if (!seen.insert(key).second) fail(fmt::format("header has duplicate key '{}'", key));
      if (key == "__metadata__")
        check_metadata(value);
      else
        out.push_back(entry(key, value));
    }
    return out;
  }

 private:
  void check_metadata(const json::Value& v) const {
    if (v.is_null()) return;  // the reference reader treats null as absent
    const json::Object* obj = v.as_object();
    if (!obj) fail(fmt::format("__metadata__ must be an object of strings, not {}", v.kind()));
    for (const auto& [k, val] : *obj)
      if (!val.as_string())
        fail(fmt::format("__metadata__ value '{}' must be a string, not {}", k, val.kind()));
  }

  Entry entry(const std::string& name, const json::Value& v) const {
    if (!v.as_object())
      fail(name,
           fmt::format("expected an object with dtype, shape and data_offsets, not {}", v.kind()));
    Entry e;
    e.name = name;
    e.dtype = dtype(name, field(name, v, "dtype"));
    const json::Array* shape = field(name, v, "shape").as_array();
    if (!shape) fail(name, "'shape' must be an array of non-negative integers");
    for (const json::Value& d : *shape) e.shape.push_back(u64(name, "shape", d));
    const json::Array* offsets = field(name, v, "data_offsets").as_array();
    if (!offsets || offsets->size() != 2)
      fail(name, "'data_offsets' must be an array [begin, end] of two non-negative integers");
    e.begin = u64(name, "data_offsets", (*offsets)[0]);
    e.end = u64(name, "data_offsets", (*offsets)[1]);
    return e;
  }

  const json::Value& field(const std::string& name, const json::Value& v,
                           std::string_view key) const {
    const json::Value* f = v.find(key);
    if (!f) fail(name, fmt::format("missing '{}'", key));
    return *f;
  }

  uint64_t u64(const std::string& name, std::string_view key, const json::Value& v) const {
    const json::Number* n = v.as_number();
    std::optional<uint64_t> x = n ? n->as_u64() : std::nullopt;
    if (!x)
      fail(name, fmt::format("'{}' must hold non-negative integers below 2^64, not {}", key,
                             n ? n->raw : std::string(v.kind())));
    return *x;
  }

  DType dtype(const std::string& name, const json::Value& v) const {
    const std::string* s = v.as_string();
    if (!s) fail(name, fmt::format("'dtype' must be a string, not {}", v.kind()));
    for (const auto& f : kFormatDTypes)
      if (f.name == *s) return f.dtype;
    for (std::string_view u : kUnsupportedDTypes)
      if (u == *s)
        fail(name, fmt::format("unsupported dtype '{}': rlx has no such element type yet", *s));
    fail(name, fmt::format("unknown dtype '{}'", *s));
  }

  std::string path_;
};

// Bytes of a tensor, or nullopt when the arithmetic (or rlx's int64 shapes) would overflow.
std::optional<uint64_t> byte_size(const Entry& e) {
  uint64_t n = 1;
  for (uint64_t d : e.shape)
    if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  if (n > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(n, dtype_size(e.dtype), &n))
    return std::nullopt;
  return n;
}

// The reference reader's Metadata::validate: in offset order, each tensor starts where the
// previous one ended (the first at 0) and spans exactly its element bytes. Returns the end of
// the data section.
uint64_t check_layout(const HeaderReader& r, std::vector<Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    std::string offsets = fmt::format("data_offsets [{}, {}]", e.begin, e.end);
    if (e.end < e.begin)
      r.fail(e.name, fmt::format("invalid offsets: {} end before they begin", offsets));
    if (e.begin < pos)
      r.fail(e.name, fmt::format("invalid offsets: {} overlap tensor '{}', which ends at {}",
                                 offsets, prev->name, pos));
    if (e.begin > pos)
      r.fail(e.name, prev ? fmt::format("invalid offsets: {} leave a gap of {} bytes after "
                                        "tensor '{}', which ends at {}",
                                        offsets, e.begin - pos, prev->name, pos)
                          : fmt::format("invalid offsets: {} leave a gap: the first tensor "
                                        "must begin at 0",
                                        offsets));
    std::optional<uint64_t> bytes = byte_size(e);
    if (!bytes)
      r.fail(e.name,
             fmt::format("shape [{}] overflows 64-bit size arithmetic", fmt::join(e.shape, ", ")));
    if (e.end - e.begin != *bytes)
      r.fail(e.name,
             fmt::format("size mismatch: {} hold {} bytes but {} [{}] needs {} bytes", offsets,
                         e.end - e.begin, format_name(e.dtype), fmt::join(e.shape, ", "), *bytes));
    pos = e.end;
    prev = &e;
  }
  return pos;
}

// A mapped file whose header and layout passed the reference reader's checks.
struct ValidatedFile {
  std::shared_ptr<MappedFile> file;
  std::vector<Entry> entries;
  const unsigned char* data = nullptr;  // start of the data section
};

ValidatedFile open_validated(const std::filesystem::path& path, bool copy_on_write) {
  HeaderReader r(path);
  auto mapped = std::make_shared<MappedFile>(path, copy_on_write);
  const MappedFile& file = *mapped;
  const unsigned char* base = file.data();
  if (file.size() < 8)
    r.fail(
        fmt::format("header too small: the file has {} bytes, fewer than the 8-byte header "
                    "length",
                    file.size()));
  uint64_t n;
  std::memcpy(&n, base, 8);
  if (n > kMaxHeaderBytes)
    r.fail(fmt::format("header too large: header length {} exceeds the limit of {} bytes", n,
                       kMaxHeaderBytes));
  if (8 + n > file.size())
    r.fail(fmt::format("invalid header length: a {}-byte header does not fit in the {}-byte file",
                       n, file.size()));
  std::string_view text(reinterpret_cast<const char*>(base) + 8, n);
  if (auto bad = json::utf8_error_offset(text))
    r.fail(fmt::format("header is not valid UTF-8 (byte {} of the header)", *bad));
  json::Value header;
  try {
    header = json::parse(text);
  } catch (const std::runtime_error& e) {
    r.fail(fmt::format("header is not valid JSON: {}", e.what()));
  }
  std::vector<Entry> entries = r.entries(header);
  uint64_t data_bytes = check_layout(r, entries);
  uint64_t available = file.size() - 8 - n;
  if (data_bytes < available)
    r.fail(fmt::format("trailing bytes: tensor data ends at byte {} but the file has {} bytes",
                       8 + n + data_bytes, file.size()));
  if (data_bytes > available)
    r.fail(
        fmt::format("truncated: tensor data needs {} bytes but the file holds {} after the "
                    "header",
                    data_bytes, available));

  return {mapped, std::move(entries), base + 8 + n};
}

}  // namespace

TensorMap read_safetensors(const std::filesystem::path& path) {
  // Tensors are copied out of the mapping rather than viewed in place: offsets are often
  // misaligned for the element type, and a view would fault (SIGBUS) if the file were later
  // truncated or rewritten, e.g. when a command writes its output over its input.
  ValidatedFile v = open_validated(path, /*copy_on_write=*/false);
  const std::vector<Entry>& entries = v.entries;
  const unsigned char* data = v.data;
  TensorMap out;
  for (const Entry& e : entries) {
    std::vector<int64_t> shape(e.shape.begin(), e.shape.end());
    Tensor t(e.dtype, std::move(shape));
    if (t.nbytes() > 0) std::memcpy(t.data(), data + e.begin, t.nbytes());
    out.emplace(e.name, std::move(t));
  }
  return out;
}

namespace {

// The files map_safetensors mapped, so mapped_origin can say where a tensor's bytes lie on disk.
struct MappedRecord {
  std::weak_ptr<MappedFile> file;
  std::filesystem::path path;
  struct View {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::map<const void*, View> views;  // by data pointer
};
std::mutex g_mapped_mu;
std::vector<MappedRecord> g_mapped;

// Whether any page of [p, p + n) of a private file mapping was written by this process: such a
// page became anonymous memory (/proc/self/pagemap bit 61 clear while present, or swapped).
// Unknown (no pagemap) counts as written.
bool privately_written(const void* p, size_t n) {
  if (n == 0) return false;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t first = reinterpret_cast<uintptr_t>(p) / page;
  uintptr_t last = (reinterpret_cast<uintptr_t>(p) + n - 1) / page;
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  std::vector<uint64_t> flags(last - first + 1);
  ssize_t want = static_cast<ssize_t>(flags.size() * 8);
  ssize_t got = ::pread(fd, flags.data(), static_cast<size_t>(want), static_cast<off_t>(first * 8));
  ::close(fd);
  if (got != want) return true;
  for (uint64_t f : flags) {
    bool present = f >> 63 & 1, swapped = f >> 62 & 1, file_page = f >> 61 & 1;
    if (swapped || (present && !file_page)) return true;
  }
  return false;
}

}  // namespace

std::optional<TensorOrigin> mapped_origin(const Tensor& t) {
  if (!t.data() || t.nbytes() == 0) return std::nullopt;
  std::lock_guard lock(g_mapped_mu);
  std::erase_if(g_mapped, [](const MappedRecord& r) { return r.file.expired(); });
  for (const MappedRecord& r : g_mapped) {
    auto it = r.views.find(t.data());
    // Same start but another dtype or shape (a reshaped view): not that tensor of the file.
    if (it == r.views.end() || it->second.dtype != t.dtype() || it->second.shape != t.shape())
      continue;
    std::shared_ptr<MappedFile> file = r.file.lock();
    if (!file) continue;
    struct stat st {};
    if (::stat(r.path.c_str(), &st) != 0 ||
        MappedFile::Identity{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                             st.st_mtim.tv_nsec} != file->identity())
      return std::nullopt;  // replaced or changed on disk since it was mapped
    if (privately_written(t.data(), t.nbytes())) return std::nullopt;
    return TensorOrigin{r.path, it->second.name};
  }
  return std::nullopt;
}

namespace {

void remember_mapping(const std::filesystem::path& path, const ValidatedFile& v,
                      const TensorMap& tensors) {
  MappedRecord r{v.file, std::filesystem::absolute(path).lexically_normal(), {}};
  for (const auto& [name, t] : tensors) {
    const auto* d = static_cast<const unsigned char*>(t.data());
    // Views only: an owned copy lies outside the mapping.
    if (d >= v.file->data() && d < v.file->data() + v.file->size())
      r.views.emplace(d, MappedRecord::View{name, t.dtype(), t.shape()});
  }
  std::lock_guard lock(g_mapped_mu);
  g_mapped.push_back(std::move(r));
}

}  // namespace

TensorMap map_safetensors(const std::filesystem::path& path) {
  ValidatedFile v = open_validated(path, /*copy_on_write=*/true);
  TensorMap out;
  for (const Entry& e : v.entries) {
    std::vector<int64_t> shape(e.shape.begin(), e.shape.end());
    const unsigned char* at = v.data + e.begin;
    size_t align = dtype_size(e.dtype);
    if (reinterpret_cast<uintptr_t>(at) % align == 0 && e.end > e.begin) {
      out.emplace(e.name, Tensor::view(e.dtype, std::move(shape), const_cast<unsigned char*>(at),
                                       v.file));
    } else {  // misaligned for its element type (or empty): an owned copy
      Tensor t(e.dtype, std::move(shape));
      if (t.nbytes() > 0) std::memcpy(t.data(), at, t.nbytes());
      out.emplace(e.name, std::move(t));
    }
  }
  remember_mapping(path, v, out);
  return out;
}

void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // Same compact layout as the reference writer, so its files and ours compare byte for byte.
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) header += ',';
      first = false;
      header += json::json_quote(k) + ":" + json::json_quote(v);
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw_user_error(
          fmt::format("{}: cannot write a tensor named '__metadata__': the name is "
                      "reserved for metadata",
                      path.string()));
    if (!t.data() && t.numel() > 0)
      throw_user_error(fmt::format("{}: tensor '{}' has no data", path.string(), name));
    if (header.size() > 1) header += ',';
    header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          json::json_quote(name), format_name(t.dtype()), fmt::join(t.shape(), ","),
                          offset, offset + t.nbytes());
    offset += t.nbytes();
  }
  header += "}";
  // Aligns the data section to 8 bytes, as the reference writer does.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f)
    throw_user_error(
        fmt::format("{}: cannot open for writing: {}", path.string(), std::strerror(errno)));
  uint64_t n = header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const auto& [name, t] : tensors)
    f.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  f.close();
  if (!f)
    throw_user_error(fmt::format("{}: write failed: {}", path.string(), std::strerror(errno)));
}

}  // namespace rlx
