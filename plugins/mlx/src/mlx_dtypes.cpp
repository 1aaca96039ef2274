#include "mlx_dtypes.h"

#include <fmt/format.h>
#include <mlx/ops.h>

#include <cstring>

#include "rlx/core/error.h"

namespace rlx::mlx_target {

namespace mx = mlx::core;

std::optional<mx::Dtype> mlx_dtype(DType d) {
  switch (d) {
    case DType::kBool:
      return mx::bool_;
    case DType::kI8:
      return mx::int8;
    case DType::kU8:
      return mx::uint8;
    case DType::kI16:
      return mx::int16;
    case DType::kI32:
      return mx::int32;
    case DType::kI64:
      return mx::int64;
    case DType::kF16:
      return mx::float16;
    case DType::kBF16:
      return mx::bfloat16;
    case DType::kF32:
      return mx::float32;
    case DType::kF64:
      return mx::float64;
    case DType::kU16:
      return mx::uint16;
    case DType::kU32:
      return mx::uint32;
    case DType::kU64:
      return mx::uint64;
    case DType::kC64:  // storage only: dtype_refusal keeps every op but bitcast off it
      return mx::complex64;
    default:
      break;
  }
  return std::nullopt;
}

std::string dtype_refusal(const std::string& op, const std::vector<TensorType>& types) {
  for (const TensorType& t : types) {
    // c64 is held (inputs, outputs, the bitcast view) but not computed on: the split-complex
    // rewrite gives every c64 node f32 parts, as on the kernel-language targets.
    if (mlx_dtype(t.dtype) && !(is_complex(t.dtype) && op != "bitcast")) continue;
    if (is_complex(t.dtype))
      return fmt::format(
          "{} has no complex type, so mlx has no c64 kernel for {}: split complex values into "
          "real and imaginary parts before compiling",
          kLanguage, op);
    return fmt::format("{} has no {} type, so mlx cannot compute {} in it", kLanguage,
                       dtype_name(t.dtype), op);
  }
  return "";
}

mx::Dtype to_mlx(DType d) {
  std::optional<mx::Dtype> t = mlx_dtype(d);
  if (!t) throw_unsupported(dtype_refusal("a value", {TensorType{d, {}}}));
  return *t;
}

mx::Shape mlx_shape(const TensorType& t) {
  mx::Shape s;
  for (const Dim& d : t.shape) s.push_back(static_cast<int>(d.value));
  return s;
}

mx::Shape mlx_shape(const std::vector<int64_t>& v) {
  mx::Shape s;
  for (int64_t d : v) s.push_back(static_cast<int>(d));
  return s;
}

mx::array copy_in(const void* data, size_t bytes, DType dtype, const mx::Shape& shape) {
  const auto* p = static_cast<const uint8_t*>(data);
  mx::array raw(p, mx::Shape{static_cast<int>(bytes)}, mx::uint8);
  return mx::reshape(mx::view(raw, to_mlx(dtype)), shape);
}

mx::array borrow(const Tensor& t) {
  mx::Shape shape;
  for (int64_t d : t.shape()) shape.push_back(static_cast<int>(d));
  auto* keep = new Tensor(t);
  return mx::array(const_cast<void*>(t.data()), shape, to_mlx(t.dtype()),
                   [keep](void*) { delete keep; });
}

void copy_out(const mx::array& a, void* dst, size_t bytes) {
  if (a.nbytes() != bytes)
    throw_internal_error(
        fmt::format("mlx: an output holds {} bytes, its binding {}", a.nbytes(), bytes));
  if (!a.flags().row_contiguous)
    throw_internal_error("mlx: an output is not row-contiguous after evaluation");
  if (bytes) std::memcpy(dst, a.data<uint8_t>(), bytes);
}

}  // namespace rlx::mlx_target
