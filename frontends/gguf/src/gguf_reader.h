// GGUF v2/v3 files (llama.cpp's format): header, metadata key/values, tensor infos, alignment and
// the data section, validated as llama.cpp's reader (ggml/src/gguf.cpp) does. Every error names
// the file, the key or tensor, the byte offset, and what is wrong; nothing is ever read outside
// the bytes given.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf_types.h"

namespace rlx::gguf {

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
std::string_view value_type_name(ValueType t);  // "u32", "string", "array"

// One metadata value. Scalars fill one field by type; arrays keep their elements in one typed
// vector (32,000-entry token tables stay compact).
struct Value {
  ValueType type = ValueType::kU8;
  uint64_t u = 0;  // unsigned integers and bool
  int64_t i = 0;   // signed integers
  double f = 0;    // f32, f64
  std::string s;
  // Arrays: element type, then exactly one of these is used.
  ValueType elem = ValueType::kU8;
  std::vector<int64_t> ints;  // integer and bool elements (u64 above INT64_MAX wrap)
  std::vector<double> floats;
  std::vector<std::string> strings;
  std::vector<Value> arrays;  // arrays of arrays

  bool is_array() const { return type == ValueType::kArray; }
  size_t size() const;                     // array length (0 for scalars)
  std::optional<int64_t> as_int() const;   // an integer or bool scalar that fits in int64
  std::optional<double> as_float() const;  // a float or integer scalar
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;         // nullptr unless a string
  std::string str(size_t max_items = 8) const;  // short text for messages and metadata
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous (row) dim
  const GgmlType* type = nullptr;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t nbytes = 0;
  int64_t numel = 0;
  // Empty when the tensor is usable; otherwise why not (a partial block per row, ...).
  std::string problem;

  int64_t row_elems() const { return ne.empty() ? 1 : ne[0]; }
  int64_t rows() const { return ne.empty() || ne[0] == 0 ? 0 : numel / ne[0]; }
  // Shape in row-major (numpy / Hugging Face) order: ne reversed.
  std::vector<int64_t> shape() const { return {ne.rbegin(), ne.rend()}; }
};

struct ParseOptions {
  // llama.cpp rejects a file with any tensor whose row is not a whole number of blocks (old
  // quantizers packed such tensors as one stream of blocks crossing rows). When true, such
  // tensors are kept with `problem` set instead, sized as ceil(elements / block) blocks the way
  // those writers laid them out, so the rest of the file can still be read.
  bool allow_partial_blocks = false;
};

class GgufFile {
 public:
  std::string source;  // the file name used in messages
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;                       // start of the data section in the file
  std::vector<std::pair<std::string, Value>> kv;  // in file order
  std::vector<TensorInfo> tensors;                // in file order

  const Value* find(const std::string& key) const;
  const TensorInfo* tensor(const std::string& name) const;
  // The tensor's bytes; throws a user error naming the file and tensor when it has a problem.
  std::span<const uint8_t> bytes(const TensorInfo& t) const;
  // Keeps the file's bytes alive (an mmap, or nothing when parsing caller-owned memory).
  const std::shared_ptr<const void>& owner() const { return owner_; }

 private:
  friend GgufFile parse_gguf(std::span<const uint8_t>, std::string, ParseOptions,
                             std::shared_ptr<const void>);
  std::span<const uint8_t> file_;
  std::shared_ptr<const void> owner_;
  std::map<std::string, size_t> kv_index_, tensor_index_;
};

// Parses `bytes` (which `owner`, if any, keeps alive). Throws rlx::Error (kind user).
GgufFile parse_gguf(std::span<const uint8_t> bytes, std::string source, ParseOptions options = {},
                    std::shared_ptr<const void> owner = nullptr);
// Maps the file (privately: copy-on-write) and parses it; the mapping lives as long as the
// GgufFile or any tensor viewing it.
GgufFile read_gguf(const std::filesystem::path& path, ParseOptions options = {});

}  // namespace rlx::gguf
