#include "stablehlo_types.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx::tpu {

std::string element_type(DType t) {
  switch (t) {
    case DType::kBool:
      return "i1";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "ui8";
    case DType::kI16:
      return "i16";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kC64:
      return "complex<f32>";
    case DType::kU16:
      return "ui16";
    case DType::kU32:
      return "ui32";
    case DType::kU64:
      return "ui64";
  }
  throw_internal_error("tpu: unknown dtype");
}

std::string tensor_type(const TensorType& t) {
  std::string s = "tensor<";
  for (const Dim& d : t.shape) {
    if (!d.is_static())
      throw_internal_error(fmt::format(
          "tpu: dim {} is symbolic at emission; the runtime binds every dim first", d.sym));
    s += fmt::format("{}x", d.value);
  }
  return s + element_type(t.dtype) + ">";
}

std::string dense_literal(const Tensor& t) {
  const auto* bytes = static_cast<const unsigned char*>(t.data());
  const size_t n = t.nbytes();
  if (t.dtype() == DType::kBool)
    throw_internal_error("tpu: bool constants are written as ui8 and converted");
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string s = "dense<\"0x";
  s.reserve(n * 2 + 12);
  for (size_t i = 0; i < n; ++i) {
    s += kHex[bytes[i] >> 4];
    s += kHex[bytes[i] & 15];
  }
  return s + "\">";
}

const char* comparison_type(DType t) {
  if (is_float(t)) return "FLOAT";
  if (t == DType::kBool || is_unsigned(t)) return "UNSIGNED";
  return "SIGNED";
}

}  // namespace rlx::tpu
