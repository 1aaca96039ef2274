// A strict JSON (RFC 8259) reader and a string quoter, private to rlx. It exists for model files
// (safetensors headers, config.json, tokenizer.json) and --json output; simdjson does the
// parsing, this API only keeps a small document tree that callers walk.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rlx::json {

struct Value;
struct Member;
using Array = std::vector<Value>;
// Members in document order; duplicate keys are kept so callers can reject them. A struct
// rather than std::pair so the recursive type is complete where clang requires it.
using Object = std::vector<Member>;

struct Number {
  double value = 0;
  std::string raw;  // the literal as written, so integers beyond 2^53 keep every digit
  bool is_integer() const { return raw.find_first_of(".eE") == std::string::npos; }
  std::optional<uint64_t> as_u64() const;  // nullopt unless a non-negative integer that fits
  std::optional<int64_t> as_i64() const;
};

struct Value {
  std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> v;

  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  const bool* as_bool() const { return std::get_if<bool>(&v); }
  const Number* as_number() const { return std::get_if<Number>(&v); }
  const std::string* as_string() const { return std::get_if<std::string>(&v); }
  const Array* as_array() const { return std::get_if<Array>(&v); }
  const Object* as_object() const { return std::get_if<Object>(&v); }
  // First member named `key` of an object; null when absent or not an object.
  const Value* find(std::string_view key) const;
  std::string_view kind() const;  // "null", "bool", "number", "string", "array", "object"
};

struct Member {
  std::string first;
  Value second;
  Member() = default;
  Member(std::string key, Value value) : first(std::move(key)), second(std::move(value)) {}
};

// Parses one JSON text surrounded by optional whitespace. Throws std::runtime_error whose
// message ends in "at byte N". Strings must be valid UTF-8; \u escapes (surrogate pairs
// included) are decoded to UTF-8. Nesting deeper than 128 levels is refused, and so is a number
// beyond the range of a double (1e400), which RFC 8259 leaves to the implementation.
Value parse(std::string_view text);

// Byte offset of the first invalid UTF-8 sequence in s, or nullopt when s is valid.
std::optional<size_t> utf8_error_offset(std::string_view s);

// `s` as a JSON string literal, quotes included; s is taken to be UTF-8.
std::string json_quote(std::string_view s);

}  // namespace rlx::json
