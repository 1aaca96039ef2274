#include "arrays.h"

#include <fmt/format.h>
#include <nanobind/stl/string.h>

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

template <typename Array>
bool c_contiguous(const Array& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// The array's memory as a Tensor; the array stays referenced until the last Tensor sharing that
// memory is gone, which may be after the run (the GIL is taken back to let it go).
template <typename Array>
Tensor view_of(const Array& a, DType dtype) {
  std::vector<int64_t> shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
  auto* held = new Array(a);
  std::shared_ptr<void> owner(held, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<Array*>(p);
  });
  return Tensor::view(dtype, std::move(shape), const_cast<void*>(a.data()), std::move(owner));
}

// A NumPy array of ml_dtypes.bfloat16 (NumPy exports no DLPack or buffer for it) as its bits: a
// C-contiguous uint16 array over the same memory (a copy first when it is strided); None for
// anything else.
nb::object bf16_bits(nb::handle value) {
  if (!nb::hasattr(value, "dtype")) return nb::none();
  nb::object dtype = value.attr("dtype");
  if (!nb::hasattr(dtype, "name") ||
      nb::cast<std::string>(nb::str(dtype.attr("name"))) != "bfloat16")
    return nb::none();
  nb::module_ np = nb::module_::import_("numpy");
  return np.attr("ascontiguousarray")(value).attr("view")(np.attr("uint16"));
}

}  // namespace

Tensor tensor_from_python(nb::handle value, const std::string& name) {
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(value, array, /*convert=*/false)) {
    if (nb::object bits = bf16_bits(value); !bits.is_none()) {
      if (!nb::try_cast(bits, array, false))
        throw_user_error(fmt::format("input '{}': cannot read its bfloat16 array", name));
      return view_of(array, DType::kBF16);
    }
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
  const bool bf16 = tensor.dtype() == DType::kBF16;
  nb::object bfloat16;
  if (bf16) {
    try {
      bfloat16 = nb::module_::import_("ml_dtypes").attr("bfloat16");
    } catch (const nb::python_error&) {
      throw nb::type_error(
          "the output is bf16, which NumPy has no dtype for: pip install ml_dtypes (NumPy "
          "arrays of ml_dtypes.bfloat16), or pass outputs={name: tensor} with a bf16 DLPack "
          "tensor (torch.bfloat16) to write into");
    }
  }
  auto* kept = new Tensor(tensor);
  nb::capsule owner(kept, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(tensor.shape().begin(), tensor.shape().end());
  // An empty tensor may have no memory at all; NumPy still wants a non-null pointer.
  static char empty_storage alignas(64);
  void* data = tensor.numel() == 0 ? &empty_storage : kept->data();
  // bf16 goes out as its bits and is viewed as ml_dtypes.bfloat16 (same memory).
  nb::ndarray<nb::numpy> array(
      data, shape.size(), shape.data(), owner, nullptr,
      bf16 ? dlpack_from_dtype(DType::kU16) : dlpack_from_dtype(tensor.dtype()));
  nb::object out = array.cast();
  return bf16 ? out.attr("view")(bfloat16) : out;
}

Tensor output_view(nb::handle value, const std::string& name, DType dtype, size_t rank) {
  nb::ndarray<> array;  // writable
  bool cast = nb::try_cast(value, array, /*convert=*/false);
  std::optional<DType> given;
  if (!cast) {
    if (nb::object bits = bf16_bits(value); !bits.is_none()) {
      // Only a C-contiguous array shares its memory with the uint16 view.
      nb::object flags = value.attr("flags");
      if (nb::cast<bool>(flags.attr("c_contiguous")) && nb::try_cast(bits, array, false))
        cast = true, given = DType::kBF16;
    }
  }
  if (!cast) {
    if (nb::hasattr(value, "flags") && !nb::cast<bool>(value.attr("flags").attr("writeable")))
      throw_user_error(fmt::format("outputs['{}'] is read-only: give a writable array", name));
    throw_user_error(fmt::format(
        "outputs['{}']: a {} is not a writable C-contiguous array (NumPy or DLPack) to write "
        "into",
        name, nb::inst_name(value).c_str()));
  }
  if (array.device_type() != nb::device::cpu::value)
    throw_user_error(
        fmt::format("outputs['{}'] is on a device (DLPack device type {}); give a host (CPU) array",
                    name, array.device_type()));
  if (!given) given = dtype_from_dlpack(array.dtype());
  if (!given || *given != dtype)
    throw_user_error(
        fmt::format("outputs['{}'] has dtype {}, and the output is {}: give an "
                    "array of {} (rlx converts nothing on its own)",
                    name, given ? std::string(dtype_name(*given)) : "unknown", dtype_name(dtype),
                    dtype_name(dtype)));
  if (array.ndim() != rank)
    throw_user_error(
        fmt::format("outputs['{}'] has {} dims, and the output has {}", name, array.ndim(), rank));
  if (!c_contiguous(array))
    throw_user_error(
        fmt::format("outputs['{}'] is not C-contiguous: give a contiguous array "
                    "(numpy.empty(shape, dtype) is)",
                    name));
  return view_of(array, dtype);
}

}  // namespace rlx::python
