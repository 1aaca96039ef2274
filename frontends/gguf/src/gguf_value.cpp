// Metadata value accessors and their short text form.
#include <fmt/format.h>

#include <limits>

#include "gguf_reader.h"

namespace rlx::gguf {

std::string_view value_type_name(ValueType t) {
  static constexpr std::string_view kNames[] = {"u8",  "i8",  "u16",  "i16",    "u32",
                                                "i32", "f32", "bool", "string", "array",
                                                "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

namespace {

bool is_unsigned(ValueType t) {
  return t == ValueType::kU8 || t == ValueType::kU16 || t == ValueType::kU32 ||
         t == ValueType::kU64 || t == ValueType::kBool;
}
bool is_signed(ValueType t) {
  return t == ValueType::kI8 || t == ValueType::kI16 || t == ValueType::kI32 ||
         t == ValueType::kI64;
}

}  // namespace

size_t Value::size() const {
  if (!is_array()) return 0;
  return ints.size() + floats.size() + strings.size() + arrays.size();
}

std::optional<int64_t> Value::as_int() const {
  if (is_signed(type)) return i;
  if (is_unsigned(type) && u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return static_cast<int64_t>(u);
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (type == ValueType::kF32 || type == ValueType::kF64) return f;
  if (is_signed(type)) return static_cast<double>(i);
  if (is_unsigned(type) && type != ValueType::kBool) return static_cast<double>(u);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (type == ValueType::kBool) return u != 0;
  return std::nullopt;
}

const std::string* Value::as_string() const {
  return type == ValueType::kString ? &s : nullptr;
}

std::string Value::str(size_t max_items) const {
  switch (type) {
    case ValueType::kString:
      return s;
    case ValueType::kBool:
      return u ? "true" : "false";
    case ValueType::kF32:
    case ValueType::kF64:
      return fmt::format("{}", f);
    case ValueType::kArray: {
      std::string out = "[";
      size_t n = size();
      for (size_t k = 0; k < n && k < max_items; ++k) {
        if (k) out += ", ";
        if (!ints.empty())
          out += std::to_string(ints[k]);
        else if (!floats.empty())
          out += fmt::format("{}", floats[k]);
        else if (!strings.empty())
          out += fmt::format("\"{}\"", strings[k]);
        else
          out += arrays[k].str(max_items);
      }
      if (n > max_items) out += fmt::format(", ... ({} {} in all)", n, value_type_name(elem));
      return out + "]";
    }
    default:
      return is_signed(type) ? std::to_string(i) : std::to_string(u);
  }
}

}  // namespace rlx::gguf
