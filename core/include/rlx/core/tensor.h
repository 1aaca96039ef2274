// Host tensor: dtype, static shape, 64-byte aligned contiguous row-major storage shared between
// copies (copying a Tensor never copies data; use clone() for that).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rlx/core/dtype.h"

namespace rlx {

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled
  // Wraps external memory kept alive by `owner` (an mmap, a plugin's buffer).
  static Tensor view(DType dtype, std::vector<int64_t> shape, void* data,
                     std::shared_ptr<void> owner);
  template <typename T>
  static Tensor from(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const;
  bool defined() const { return data_ != nullptr || numel() == 0; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* as() { return static_cast<T*>(data_); }
  template <typename T> const T* as() const { return static_cast<const T*>(data_); }

  Tensor clone() const;
  // Element i converted to double (complex: real part); for tests and printing.
  double scalar_at(int64_t i) const;
  std::string shape_str() const;

 private:
  DType dtype_ = DType::kF32;
  std::vector<int64_t> shape_;
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
};

template <typename T>
Tensor Tensor::from(DType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel() || sizeof(T) != dtype_size(dtype))
    throw std::invalid_argument("Tensor::from: value count or element size does not match");
  std::copy(values.begin(), values.end(), t.as<T>());
  return t;
}

}  // namespace rlx
