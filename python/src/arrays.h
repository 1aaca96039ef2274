// Host tensors to and from Python arrays (NumPy, or anything speaking DLPack: torch, jax). Both
// directions share memory where they can: a C-contiguous CPU array becomes a Tensor view of its
// own memory, and an output Tensor becomes a NumPy array over rlx's buffer, kept alive by it.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "rlx/core/tensor.h"

namespace rlx::python {

// `value` as a Tensor for the input `name`: a view when `value` is a C-contiguous CPU array of a
// dtype rlx has, otherwise a copy made by NumPy (lists, strided arrays). Raises a user error
// naming the input when the dtype or device cannot be used.
Tensor tensor_from_python(nanobind::handle value, const std::string& name);

// A NumPy array over `tensor`'s memory, which it keeps alive (no copy). bf16 has no NumPy dtype
// of its own: it comes as ml_dtypes.bfloat16 when that package is importable, otherwise a
// TypeError says how to get it (rlx never converts to another dtype on its own).
nanobind::object numpy_from_tensor(const Tensor& tensor);

// `value` (a writable, C-contiguous CPU array: NumPy or DLPack) as a Tensor over its memory, for
// the output `name` of dtype `dtype` and rank `rank`. Raises a user error naming the output and
// what is wrong (dtype, rank, layout, read-only, device) otherwise.
Tensor output_view(nanobind::handle value, const std::string& name, DType dtype, size_t rank);

}  // namespace rlx::python
