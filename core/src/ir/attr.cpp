#include "rlx/core/attr.h"

#include <fmt/format.h>

#include <cmath>
#include <complex>

#include "rlx/core/half.h"
#include "ir/text_cursor.h"

namespace rlx {
namespace {

// Shortest round-trip text of a float or double that still reads back as a float literal.
template <typename F>
std::string float_str(F v) {
  if (std::isnan(v)) return "nan";  // the sign of a NaN carries no meaning worth a token
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n' covers inf
  return s;
}

std::string element_str(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kBool:
      return t.as<uint8_t>()[i] ? "true" : "false";
    case DType::kI8:
      return std::to_string(t.as<int8_t>()[i]);
    case DType::kU8:
      return std::to_string(t.as<uint8_t>()[i]);
    case DType::kI16:
      return std::to_string(t.as<int16_t>()[i]);
    case DType::kI32:
      return std::to_string(t.as<int32_t>()[i]);
    case DType::kI64:
      return std::to_string(t.as<int64_t>()[i]);
    case DType::kF16:
      return float_str(f16_to_f32(t.as<uint16_t>()[i]));
    case DType::kBF16:
      return float_str(bf16_to_f32(t.as<uint16_t>()[i]));
    case DType::kF32:
      return float_str(t.as<float>()[i]);
    case DType::kF64:
      return float_str(t.as<double>()[i]);
    case DType::kU16:
      return std::to_string(t.as<uint16_t>()[i]);
    case DType::kU32:
      return std::to_string(t.as<uint32_t>()[i]);
    case DType::kU64:
      return std::to_string(t.as<uint64_t>()[i]);
    case DType::kC64: {
      std::complex<float> c = t.as<std::complex<float>>()[i];
      return fmt::format("({}, {})", float_str(c.real()), float_str(c.imag()));
    }
  }
  return "?";
}

std::string tensor_str(const Tensor& t) {
  std::string type = fmt::format("{}{}", dtype_name(t.dtype()), t.shape_str());
  // An attribute tensor without data is a bug elsewhere; printing must still work for the
  // message that reports it.
  if (!t.data()) return fmt::format("dense<{}: <no data>>", type);
  std::string out = fmt::format("dense<{}: [", type);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) out += ", ";
    out += element_str(t, i);
  }
  return out + "]>";
}

template <typename T, typename F>
std::string list_str(const std::vector<T>& xs, F&& item) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) out += ", ";
    out += item(xs[i]);
  }
  return out + "]";
}

struct Printer {
  std::string operator()(int64_t v) const { return std::to_string(v); }
  std::string operator()(double v) const { return float_str(v); }
  std::string operator()(bool v) const { return v ? "true" : "false"; }
  std::string operator()(const std::string& v) const { return text::quote(v); }
  std::string operator()(const IntList& v) const {
    return list_str(v, [](int64_t x) { return std::to_string(x); });
  }
  std::string operator()(const Shape& v) const {
    return list_str(v, [](const Dim& d) { return d.str(); });
  }
  std::string operator()(DType v) const { return std::string(dtype_name(v)); }
  std::string operator()(const Tensor& v) const { return tensor_str(v); }
};

}  // namespace

std::string attr_str(const AttrValue& v) {
  return std::visit(Printer{}, v);
}

}  // namespace rlx
