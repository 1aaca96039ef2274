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

// A NumPy array over `tensor`'s memory, which it keeps alive (no copy).
nanobind::object numpy_from_tensor(const Tensor& tensor);

}  // namespace rlx::python
