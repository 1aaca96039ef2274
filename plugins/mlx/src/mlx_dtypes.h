// rlx dtypes and shapes as MLX's, and host bytes in and out of MLX arrays.
#pragma once
#include <mlx/array.h>

#include <optional>
#include <string>

#include "rlx/core/graph.h"
#include "rlx/core/tensor.h"

namespace rlx::mlx_target {

// How refusals name what computes: MLX as this target drives it.
inline constexpr const char* kLanguage = "MLX as rlx maps it";

// The MLX dtype of `d`, or nullopt when the mlx target does not compute it (c64: MLX has
// complex64, but rlx's complex primitives are not mapped onto it).
std::optional<mlx::core::Dtype> mlx_dtype(DType d);
// Why `op` is refused when one of `types` has no MLX dtype; "" when all have one.
std::string dtype_refusal(const std::string& op, const std::vector<TensorType>& types);
// Like mlx_dtype, throwing the refusal (ErrorKind::kUnsupported).
mlx::core::Dtype to_mlx(DType d);

mlx::core::Shape mlx_shape(const TensorType& t);
mlx::core::Shape mlx_shape(const std::vector<int64_t>& s);

// A copy of `bytes` host bytes at `data`, as an array of `dtype` and `shape`.
mlx::core::array copy_in(const void* data, size_t bytes, DType dtype,
                         const mlx::core::Shape& shape);
// The tensor's storage without a copy: the array keeps the tensor (and so its storage) alive.
mlx::core::array borrow(const Tensor& t);
// Writes an evaluated array's elements, row-major, into `bytes` bytes at `dst`.
void copy_out(const mlx::core::array& a, void* dst, size_t bytes);

}  // namespace rlx::mlx_target
