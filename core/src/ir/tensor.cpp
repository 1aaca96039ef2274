#include "rlx/core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <complex>
#include <cstdlib>
#include <cstring>

#include "rlx/core/error.h"
#include "rlx/core/half.h"

namespace rlx {
namespace {

constexpr size_t kAlign = 64;

void check_dims(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 0)
      throw_user_error(
          fmt::format("tensor shape [{}] has a negative dimension", fmt::join(shape, ",")));
}

// Bytes for `shape` of `dtype`, refusing sizes whose product does not fit in memory arithmetic.
size_t checked_nbytes(DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > (uint64_t{1} << 62))
      throw_user_error(
          fmt::format("tensor {}[{}] is too large", dtype_name(dtype), fmt::join(shape, ",")));
  return n;
}

}  // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_dims(shape_);
  size_t bytes = checked_nbytes(dtype_, shape_);
  // Always allocate, even for empty tensors, so data() is never null on a constructed tensor.
  size_t rounded = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, void* data,
                    std::shared_ptr<void> owner) {
  check_dims(shape);
  checked_nbytes(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  RLX_CHECK(data != nullptr || t.numel() == 0, "Tensor::view of null memory");
  t.owner_ = std::move(owner);
  t.data_ = data;
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

size_t Tensor::nbytes() const {
  return static_cast<size_t>(numel()) * dtype_size(dtype_);
}

Tensor Tensor::clone() const {
  if (!data_) return *this;  // nothing to copy: undefined, or an empty view
  Tensor t(dtype_, shape_);
  std::memcpy(t.data_, data_, nbytes());
  return t;
}

double Tensor::scalar_at(int64_t i) const {
  RLX_CHECK(data_ != nullptr, "scalar_at on a tensor without data");
  RLX_CHECK(i >= 0 && i < numel(),
            fmt::format("index {} out of range for {} elements", i, numel()));
  switch (dtype_) {
    case DType::kBool:
      return as<uint8_t>()[i] != 0 ? 1.0 : 0.0;
    case DType::kI8:
      return as<int8_t>()[i];
    case DType::kU8:
      return as<uint8_t>()[i];
    case DType::kI16:
      return as<int16_t>()[i];
    case DType::kI32:
      return as<int32_t>()[i];
    case DType::kI64:
      return static_cast<double>(as<int64_t>()[i]);
    case DType::kF16:
      return f16_to_f32(as<uint16_t>()[i]);
    case DType::kBF16:
      return bf16_to_f32(as<uint16_t>()[i]);
    case DType::kF32:
      return as<float>()[i];
    case DType::kF64:
      return as<double>()[i];
    case DType::kC64:
      return as<std::complex<float>>()[i].real();
    case DType::kU16:
      return as<uint16_t>()[i];
    case DType::kU32:
      return as<uint32_t>()[i];
    case DType::kU64:
      return static_cast<double>(as<uint64_t>()[i]);
  }
  throw_internal_error("scalar_at: unknown dtype");
}

std::string Tensor::shape_str() const {
  return fmt::format("[{}]", fmt::join(shape_, ","));
}

}  // namespace rlx
