#include "arrays.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "rlx/core/error.h"

namespace rlx::python {
namespace nb = nanobind;
namespace {

using Code = nb::dlpack::dtype_code;

std::optional<DType> dtype_from_dlpack(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  const auto code = static_cast<Code>(t.code);
  switch (code) {
    case Code::Bool:
      if (t.bits == 8) return DType::kBool;
      break;
    case Code::Int:
      if (t.bits == 8) return DType::kI8;
      if (t.bits == 16) return DType::kI16;
      if (t.bits == 32) return DType::kI32;
      if (t.bits == 64) return DType::kI64;
      break;
    case Code::UInt:
      if (t.bits == 8) return DType::kU8;
      if (t.bits == 16) return DType::kU16;
      if (t.bits == 32) return DType::kU32;
      if (t.bits == 64) return DType::kU64;
      break;
    case Code::Float:
      if (t.bits == 16) return DType::kF16;
      if (t.bits == 32) return DType::kF32;
      if (t.bits == 64) return DType::kF64;
      break;
    case Code::Bfloat:
      if (t.bits == 16) return DType::kBF16;
      break;
    case Code::Complex:
      if (t.bits == 64) return DType::kC64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

nb::dlpack::dtype dlpack_from_dtype(DType t) {
  auto make = [](Code code, uint8_t bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), bits, 1};
  };
  switch (t) {
    case DType::kBool:
      return make(Code::Bool, 8);
    case DType::kI8:
      return make(Code::Int, 8);
    case DType::kI16:
      return make(Code::Int, 16);
    case DType::kI32:
      return make(Code::Int, 32);
    case DType::kI64:
      return make(Code::Int, 64);
    case DType::kU8:
      return make(Code::UInt, 8);
    case DType::kU16:
      return make(Code::UInt, 16);
    case DType::kU32:
      return make(Code::UInt, 32);
    case DType::kU64:
      return make(Code::UInt, 64);
    case DType::kF16:
      return make(Code::Float, 16);
    case DType::kBF16:
      return make(Code::Bfloat, 16);
    case DType::kF32:
      return make(Code::Float, 32);
    case DType::kF64:
      return make(Code::Float, 64);
    case DType::kC64:
      return make(Code::Complex, 64);
  }
  throw_internal_error("a dtype without a DLPack code");
}

bool c_contiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// The array's memory as a Tensor; the array stays referenced until the last Tensor sharing that
// memory is gone, which may be after the run (the GIL is taken back to let it go).
Tensor view_of(const nb::ndarray<nb::ro>& a, DType dtype) {
  std::vector<int64_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  auto* held = new nb::ndarray<nb::ro>(a);
  std::shared_ptr<void> owner(held, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::ndarray<nb::ro>*>(p);
  });
  return Tensor::view(dtype, std::move(shape), const_cast<void*>(a.data()), std::move(owner));
}

}  // namespace

Tensor tensor_from_python(nb::handle value, const std::string& name) {
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(value, array, /*convert=*/false)) {
    // Not an array object (a list, a scalar): NumPy decides its dtype and lays it out.
    nb::object converted = nb::module_::import_("numpy").attr("ascontiguousarray")(value);
    if (!nb::try_cast(converted, array, false))
      throw_user_error(fmt::format("input '{}': cannot read a {} as an array", name,
                                   nb::inst_name(value).c_str()));
  }
  if (array.device_type() != nb::device::cpu::value)
    throw_user_error(
        fmt::format("input '{}' is on a device (DLPack device type {}); pass host (CPU) arrays",
                    name, array.device_type()));
  const std::optional<DType> dtype = dtype_from_dlpack(array.dtype());
  if (!dtype)
    throw_user_error(
        fmt::format("input '{}' has an element type rlx does not have (DLPack code "
                    "{}, {} bits)",
                    name, array.dtype().code, array.dtype().bits));
  if (c_contiguous(array)) return view_of(array, *dtype);
  nb::object copy = nb::module_::import_("numpy").attr("ascontiguousarray")(value);
  nb::ndarray<nb::ro> contiguous;
  if (!nb::try_cast(copy, contiguous, false) || !c_contiguous(contiguous))
    throw_user_error(fmt::format("input '{}': cannot lay it out contiguously", name));
  return view_of(contiguous, *dtype);
}

nb::object numpy_from_tensor(const Tensor& tensor) {
  auto* kept = new Tensor(tensor);
  nb::capsule owner(kept, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(tensor.shape().begin(), tensor.shape().end());
  // An empty tensor may have no memory at all; NumPy still wants a non-null pointer.
  static char empty_storage alignas(64);
  void* data = tensor.numel() == 0 ? &empty_storage : kept->data();
  nb::ndarray<nb::numpy> array(data, shape.size(), shape.data(), owner, nullptr,
                               dlpack_from_dtype(tensor.dtype()));
  return array.cast();
}

}  // namespace rlx::python
