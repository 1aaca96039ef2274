#include "written_values.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "errors.h"
#include "rlx/core/half.h"

namespace rlx::cli {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;

std::string trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

std::optional<double> parse_double(std::string_view s) {
  if (s.starts_with('+')) s.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// An integer's value, exact across i64 and u64 alike.
struct Integer {
  bool negative = false;
  uint64_t magnitude = 0;
};

// "42", "-7", and whole numbers written as floats ("3.0", "1e3", as JSON writers may).
std::optional<Integer> parse_integer(std::string_view s) {
  Integer n;
  std::string_view digits = s;
  if (digits.starts_with('+') || digits.starts_with('-')) {
    n.negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n.magnitude);
  if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size()) return n;
  std::optional<double> d = parse_double(s);
  if (!d || !std::isfinite(*d) || std::trunc(*d) != *d || std::fabs(*d) >= 0x1p64)
    return std::nullopt;
  return Integer{*d < 0, static_cast<uint64_t>(std::fabs(*d))};
}

// Converts one literal and stores it as element `i` of `t`, or says why it cannot.
class ValueWriter {
 public:
  ValueWriter(Tensor& t, const WrittenValues& values) : t_(t), values_(values) {}

  void write(int64_t i) {
    const std::string& literal = values_.literals[static_cast<size_t>(i)];
    const DType dtype = t_.dtype();
    if (dtype == DType::kBool) {
      if (literal == "true" || literal == "1") return store<uint8_t>(i, 1);
      if (literal == "false" || literal == "0") return store<uint8_t>(i, 0);
      fail(i, "is not a bool (true, false, 1 or 0)");
    }
    if (is_integer(dtype)) return write_integer(i, literal, dtype);
    if (is_float(dtype)) return write_float(i, literal, dtype);
    throw CliError(
        fmt::format("{}: {} values cannot be written as numbers", values_.where, dtype_name(dtype)),
        "give this input in a .npy, .npz or safetensors file");
  }

 private:
  template <class T>
  void store(int64_t i, T v) {
    std::memcpy(static_cast<char*>(t_.data()) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }

  // Never rounded or clamped to fit: the model would compute on a number nobody wrote.
  [[noreturn]] void fail(int64_t i, const std::string& why) const {
    const DType dtype = t_.dtype();
    throw CliError(
        fmt::format("{}: value {} ('{}') {}", values_.where, i + 1,
                    values_.literals[static_cast<size_t>(i)], why),
        is_float(dtype)     ? fmt::format("give numbers within {}'s range", dtype_name(dtype))
        : is_integer(dtype) ? fmt::format("give whole numbers within {}'s range", dtype_name(dtype))
                            : std::string("give true, false, 1 or 0"));
  }

  void write_integer(int64_t i, const std::string& literal, DType dtype) {
    const std::optional<Integer> n = parse_integer(literal);
    if (!n) fail(i, fmt::format("is not an integer, and the input is {}", dtype_name(dtype)));
    const int bits = static_cast<int>(dtype_size(dtype)) * 8;
    const bool is_signed = !is_unsigned(dtype);
    const uint64_t most_positive = is_signed
                                       ? (uint64_t{1} << (bits - 1)) - 1
                                       : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
    const uint64_t most_negative = is_signed ? uint64_t{1} << (bits - 1) : 0;
    if (n->magnitude > (n->negative ? most_negative : most_positive)) {
      const std::string low = is_signed ? fmt::format("-{}", most_negative) : "0";
      fail(i,
           fmt::format("is outside {}'s range ({} to {})", dtype_name(dtype), low, most_positive));
    }
    // Two's complement: the negation of the magnitude, modulo 2^64, is the value.
    const uint64_t bits_of = n->negative ? 0 - n->magnitude : n->magnitude;
    switch (dtype) {
      case DType::kI8:
      case DType::kU8:
        return store(i, static_cast<uint8_t>(bits_of));
      case DType::kI16:
      case DType::kU16:
        return store(i, static_cast<uint16_t>(bits_of));
      case DType::kI32:
      case DType::kU32:
        return store(i, static_cast<uint32_t>(bits_of));
      default:
        return store(i, bits_of);
    }
  }

  void write_float(int64_t i, const std::string& literal, DType dtype) {
    const std::optional<double> d = parse_double(literal);
    if (!d) fail(i, "is not a number");
    if (dtype == DType::kF64) return store(i, *d);
    if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max())
      fail(i, fmt::format("is outside {}'s range", dtype_name(dtype)));
    const auto f = static_cast<float>(*d);
    if (dtype == DType::kF32) return store(i, f);
    const uint16_t h = dtype == DType::kF16 ? f32_to_f16(f) : f32_to_bf16(f);
    const bool overflowed = std::isfinite(f) && (dtype == DType::kF16 ? (h & 0x7fff) == 0x7c00
                                                                      : (h & 0x7fff) == 0x7f80);
    if (overflowed)
      fail(i, fmt::format("is outside {}'s range (largest {})", dtype_name(dtype),
                          dtype == DType::kF16 ? "65504" : "3.39e38"));
    store(i, h);
  }

  Tensor& t_;
  const WrittenValues& values_;
};

}  // namespace

std::vector<std::string> split_values(const std::string& list, const std::string& where) {
  std::vector<std::string> values;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    std::string item = trimmed(std::string_view(list).substr(start, comma - start));
    if (item.empty())
      throw CliError(
          fmt::format("{}: '{}' has an empty value at item {}", where, list, values.size() + 1),
          "give the values as a comma list of numbers: NAME=1,2,3");
    values.push_back(std::move(item));
    if (comma == std::string::npos) return values;
    start = comma + 1;
  }
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& where) {
  std::vector<int64_t> shape;
  if (text.empty()) return shape;
  int64_t elements = 1;
  size_t start = 0;
  while (true) {
    const size_t x = text.find('x', start);
    const std::string dim = text.substr(start, x - start);
    int64_t d = -1;
    auto [end, ec] = std::from_chars(dim.data(), dim.data() + dim.size(), d);
    if (dim.empty() || ec != std::errc() || end != dim.data() + dim.size() || d < 0)
      throw CliError(
          fmt::format("{}: '{}' is not a shape; dim '{}' is not a size", where, text, dim),
          "write the shape as sizes joined by x: NAME=2x8 (nothing after = for a scalar)");
    if (d > 0 && elements > kMaxElements / d)
      throw CliError(fmt::format("{}: shape '{}' has more than 2^40 elements", where, text));
    elements *= d;
    shape.push_back(d);
    if (x == std::string::npos) return shape;
    start = x + 1;
  }
}

std::vector<int64_t> shape_of(const WrittenValues& values, int64_t input_rank) {
  if (values.shape) return *values.shape;
  if (values.literals.size() == 1 && input_rank == 0) return {};
  return {static_cast<int64_t>(values.literals.size())};
}

Tensor make_tensor(const WrittenValues& values, DType dtype, int64_t input_rank) {
  const std::vector<int64_t> shape = shape_of(values, input_rank);
  Tensor t(dtype, shape);
  if (t.numel() != static_cast<int64_t>(values.literals.size()))
    throw CliError(
        fmt::format("{}: {} {} given for shape [{}], which holds {}", values.where,
                    values.literals.size(), values.literals.size() == 1 ? "value is" : "values are",
                    fmt::join(shape, ","), t.numel()),
        "give as many values as the shape holds");
  ValueWriter writer(t, values);
  for (int64_t i = 0; i < t.numel(); ++i) writer.write(i);
  return t;
}

}  // namespace rlx::cli
