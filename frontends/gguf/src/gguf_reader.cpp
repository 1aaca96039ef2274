// The GGUF parser. The file is read through a bounded cursor: every length, count and offset is
// checked against the bytes that remain before anything is allocated or read.
#include "gguf_reader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <limits>

#include "rlx/core/error.h"

namespace rlx::gguf {

namespace {

constexpr uint32_t kMaxDims = 4;       // GGML_MAX_DIMS
constexpr size_t kMaxNameLength = 63;  // GGML_MAX_NAME - 1
constexpr int kMaxArrayDepth = 4;      // arrays of arrays; llama.cpp allows none
constexpr uint64_t kDefaultAlignment = 32;

// Bytes the smallest encoding of one element of type t takes (strings: the u64 length).
size_t min_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kArray:
      return 12;
    default:
      return 8;
  }
}

class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, const std::string& source) : b_(bytes), source_(source) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return b_.size() - pos_; }
  // What is being read, for messages: "metadata key 'general.name'".
  void set_context(std::string c) { ctx_ = std::move(c); }

  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw_user_error(ctx_.empty()
                         ? fmt::format("{}: {} (at byte offset {})", source_, what, at)
                         : fmt::format("{}: {}: {} (at byte offset {})", source_, ctx_, what, at));
  }
  void need(uint64_t n, const char* what) const {
    if (n > remaining())
      fail(fmt::format("file truncated: {} needs {} bytes, only {} remain", what, n, remaining()),
           pos_);
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    size_t at = pos_;
    auto n = read<uint64_t>(what);
    if (n > remaining())
      fail(fmt::format("file truncated: {} claims {} bytes, only {} remain", what, n, remaining()),
           at);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  // Checks that `count` elements of at least `each` bytes can still follow, before reserving.
  void need_items(uint64_t count, size_t each, const char* what, size_t at) const {
    if (count > remaining() / each)
      fail(fmt::format("{} claims {} entries, but only {} bytes remain (at least {} each)", what,
                       count, remaining(), each),
           at);
  }

 private:
  std::span<const uint8_t> b_;
  const std::string& source_;
  std::string ctx_;
  size_t pos_ = 0;
};

ValueType read_type(Cursor& c, const char* what) {
  size_t at = c.pos();
  auto t = c.read<uint32_t>(what);
  if (t > static_cast<uint32_t>(ValueType::kF64))
    c.fail(fmt::format("{} {} is not a GGUF value type (0-12)", what, t), at);
  return static_cast<ValueType>(t);
}

void read_scalar(Cursor& c, ValueType t, Value& v) {
  v.type = t;
  switch (t) {
    case ValueType::kU8:
      v.u = c.read<uint8_t>("a u8 value");
      break;
    case ValueType::kI8:
      v.i = c.read<int8_t>("an i8 value");
      break;
    case ValueType::kU16:
      v.u = c.read<uint16_t>("a u16 value");
      break;
    case ValueType::kI16:
      v.i = c.read<int16_t>("an i16 value");
      break;
    case ValueType::kU32:
      v.u = c.read<uint32_t>("a u32 value");
      break;
    case ValueType::kI32:
      v.i = c.read<int32_t>("an i32 value");
      break;
    case ValueType::kU64:
      v.u = c.read<uint64_t>("a u64 value");
      break;
    case ValueType::kI64:
      v.i = c.read<int64_t>("an i64 value");
      break;
    case ValueType::kF32:
      v.f = c.read<float>("an f32 value");
      break;
    case ValueType::kF64:
      v.f = c.read<double>("an f64 value");
      break;
    case ValueType::kBool:
      v.u = c.read<uint8_t>("a bool value") != 0;
      break;
    case ValueType::kString:
      v.s = c.read_string("a string value");
      break;
    case ValueType::kArray:
      break;  // handled by read_value
  }
}

Value read_value(Cursor& c, ValueType t, int depth) {
  Value v;
  if (t != ValueType::kArray) {
    read_scalar(c, t, v);
    return v;
  }
  v.type = ValueType::kArray;
  size_t at = c.pos();
  v.elem = read_type(c, "array element type");
  if (v.elem == ValueType::kArray && depth >= kMaxArrayDepth)
    c.fail(fmt::format("arrays nested deeper than {} levels", kMaxArrayDepth), at);
  auto n = c.read<uint64_t>("array length");
  c.need_items(n, min_size(v.elem), "array", at);
  switch (v.elem) {
    case ValueType::kString:
      v.strings.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.strings.push_back(c.read_string("a string array entry"));
      break;
    case ValueType::kF32:
    case ValueType::kF64:
      v.floats.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.floats.push_back(read_value(c, v.elem, depth).f);
      break;
    case ValueType::kArray:
      v.arrays.reserve(n);
      for (uint64_t k = 0; k < n; ++k) v.arrays.push_back(read_value(c, v.elem, depth + 1));
      break;
    default: {
      v.ints.reserve(n);
      bool is_unsigned = v.elem == ValueType::kU8 || v.elem == ValueType::kU16 ||
                         v.elem == ValueType::kU32 || v.elem == ValueType::kU64 ||
                         v.elem == ValueType::kBool;
      for (uint64_t k = 0; k < n; ++k) {
        Value e = read_value(c, v.elem, depth);
        v.ints.push_back(is_unsigned ? static_cast<int64_t>(e.u) : e.i);
      }
    }
  }
  return v;
}

uint64_t checked_pad(uint64_t x, uint64_t align, const Cursor& c, const std::string& what) {
  uint64_t r;
  if (__builtin_add_overflow(x, align - 1, &r)) c.fail(what + " overflows 64 bits", c.pos());
  return r & ~(align - 1);
}

// Reads one tensor info; sizes and block checks, not yet offsets (they need the alignment).
TensorInfo read_tensor_info(Cursor& c) {
  TensorInfo t;
  size_t at = c.pos();
  t.name = c.read_string("tensor name");
  c.set_context(fmt::format("tensor '{}'", t.name));
  if (t.name.size() > kMaxNameLength)
    c.fail(
        fmt::format("name is {} bytes long; ggml allows at most {}", t.name.size(), kMaxNameLength),
        at);
  size_t dims_at = c.pos();
  auto n_dims = c.read<uint32_t>("dimension count");
  if (n_dims > kMaxDims)
    c.fail(fmt::format("has {} dimensions; GGUF allows at most {}", n_dims, kMaxDims), dims_at);
  t.numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    size_t dim_at = c.pos();
    auto ne = c.read<int64_t>("dimension");
    if (ne < 0) c.fail(fmt::format("dimension {} is negative ({})", d, ne), dim_at);
    if (__builtin_mul_overflow(t.numel, ne, &t.numel))
      c.fail("element count overflows 64 bits", dim_at);
    t.ne.push_back(ne);
  }
  size_t type_at = c.pos();
  auto type_id = c.read<uint32_t>("type");
  t.type = ggml_type(type_id);
  if (!t.type) c.fail(fmt::format("type id {} is not a ggml tensor type", type_id), type_at);
  t.offset = c.read<uint64_t>("data offset");
  const int64_t bs = t.type->block_size, row = t.row_elems();
  // Rows that are not whole blocks: sized the way the writers that produced them packed the
  // elements, one stream of blocks (see ParseOptions).
  uint64_t blocks = static_cast<uint64_t>(t.numel / bs + (t.numel % bs ? 1 : 0));
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(t.type->block_bytes), &t.nbytes))
    c.fail("byte size overflows 64 bits", type_at);
  if (row % bs)
    t.problem = fmt::format("{} elements per row is not a whole number of {} blocks ({} each)", row,
                            t.type->name, bs);
  else if (!t.type->dense && !t.type->quant)
    t.problem = fmt::format("type {} has no decoder in rlx", t.type->name);
  c.set_context("");
  return t;
}

}  // namespace

const Value* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv[it->second].second;
}

const TensorInfo* GgufFile::tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors[it->second];
}

std::span<const uint8_t> GgufFile::bytes(const TensorInfo& t) const {
  if (!t.problem.empty())
    throw_user_error(fmt::format("{}: tensor '{}': {}", source, t.name, t.problem));
  return file_.subspan(data_offset + t.offset, t.nbytes);
}

GgufFile parse_gguf(std::span<const uint8_t> bytes, std::string source, ParseOptions options,
                    std::shared_ptr<const void> owner) {
  GgufFile f;
  f.source = std::move(source);
  f.file_ = bytes;
  f.owner_ = std::move(owner);
  Cursor c(bytes, f.source);

  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
    c.fail("not a GGUF file (it does not start with the bytes \"GGUF\")", 0);
  c.read<uint32_t>("magic");
  f.version = c.read<uint32_t>("version");
  if (f.version == 1) c.fail("GGUF version 1 is not supported (versions 2 and 3 are)", 4);
  if ((f.version & 0xFFFF) == 0)
    c.fail(fmt::format("version field 0x{:08x} looks byte-swapped: big-endian GGUF files are not "
                       "supported",
                       f.version),
           4);
  if (f.version == 0 || f.version > 3)
    c.fail(fmt::format("GGUF version {} is not supported (versions 2 and 3 are)", f.version), 4);
  auto n_tensors = c.read<int64_t>("tensor count");
  auto n_kv = c.read<int64_t>("metadata count");
  if (n_tensors < 0) c.fail(fmt::format("tensor count {} is negative", n_tensors), 8);
  if (n_kv < 0) c.fail(fmt::format("metadata count {} is negative", n_kv), 16);
  c.need_items(n_kv, 13, "the metadata count", 16);  // key length, type, 1-byte value

  for (int64_t k = 0; k < n_kv; ++k) {
    size_t at = c.pos();
    c.set_context(fmt::format("metadata entry #{}", k));
    std::string key = c.read_string("key");
    c.set_context(fmt::format("metadata key '{}'", key));
    if (f.kv_index_.count(key)) c.fail("the key appears twice", at);
    ValueType t = read_type(c, "value type");
    Value v = read_value(c, t, 0);
    f.kv_index_[key] = f.kv.size();
    f.kv.emplace_back(std::move(key), std::move(v));
  }
  c.set_context("");

  c.need_items(n_tensors, 24, "the tensor count", 8);  // name length, dims, type, offset
  std::vector<std::string> partial;
  for (int64_t k = 0; k < n_tensors; ++k) {
    size_t at = c.pos();
    c.set_context(fmt::format("tensor info #{}", k));
    TensorInfo t = read_tensor_info(c);
    if (f.tensor_index_.count(t.name)) c.fail(fmt::format("tensor '{}' appears twice", t.name), at);
    if (t.row_elems() % t.type->block_size)
      partial.push_back(fmt::format("'{}' ({} elements per row, {} blocks of {})", t.name,
                                    t.row_elems(), t.type->name, t.type->block_size));
    f.tensor_index_[t.name] = f.tensors.size();
    f.tensors.push_back(std::move(t));
  }
  c.set_context("");
  if (!partial.empty() && !options.allow_partial_blocks) {
    std::string list;
    for (const auto& p : partial) list += (list.empty() ? "" : "; ") + p;
    c.fail(fmt::format("{} {} rows that are not a whole number of quantization blocks "
                       "(llama.cpp refuses such files too): {}",
                       partial.size(), partial.size() > 1 ? "tensors have" : "tensor has", list),
           c.pos());
  }

  if (const Value* a = f.find("general.alignment")) {
    auto v = a->as_int();
    if (!v || *v <= 0 || (*v & (*v - 1)))
      c.fail(fmt::format("general.alignment must be a nonzero power of two, got {} ({})", a->str(),
                         value_type_name(a->type)),
             0);
    f.alignment = static_cast<uint64_t>(*v);
  } else {
    f.alignment = kDefaultAlignment;
  }
  f.data_offset = checked_pad(c.pos(), f.alignment, c, "the data section offset");

  // Offsets: in file order, each tensor starts where the previous one's padded data ends.
  uint64_t expected = 0;
  for (const TensorInfo& t : f.tensors) {
    if (t.offset != expected)
      c.fail(fmt::format("tensor '{}' has data offset {}, expected {} (tensors are stored in "
                         "order, each padded to the alignment of {})",
                         t.name, t.offset, expected, f.alignment),
             f.data_offset);
    uint64_t end;
    if (__builtin_add_overflow(f.data_offset, t.offset, &end) ||
        __builtin_add_overflow(end, t.nbytes, &end) || end > bytes.size())
      c.fail(fmt::format("tensor '{}' needs bytes [{}, {}) of the file ({} bytes of {} {}), "
                         "but the file has {} bytes",
                         t.name, f.data_offset + t.offset, f.data_offset + t.offset + t.nbytes,
                         t.nbytes, t.type->name, fmt::format("[{}]", fmt::join(t.ne, ", ")),
                         bytes.size()),
             f.data_offset + t.offset);
    expected = checked_pad(expected + t.nbytes, f.alignment, c, "the data section size");
  }
  return f;
}

}  // namespace rlx::gguf
