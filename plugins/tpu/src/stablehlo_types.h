// StableHLO spellings of rlx types and constants (MLIR builtin types, dense literals).
#pragma once
#include <string>

#include "rlx/core/shape.h"
#include "rlx/core/tensor.h"

namespace rlx::tpu {

// "f32", "i1", "ui8", "bf16"; c64 is "complex<f32>".
std::string element_type(DType t);
// "tensor<2x3xf32>", "tensor<f32>" for a scalar; every dim must be static.
std::string tensor_type(const TensorType& t);
// A dense literal of the tensor's bytes: dense<"0x...">, little-endian as MLIR reads hex
// literals. Not for bool: MLIR packs i1 hex literals, so bool constants go as ui8.
std::string dense_literal(const Tensor& t);
// StableHLO's comparison type for a dtype: FLOAT, SIGNED or UNSIGNED (bool compares unsigned).
const char* comparison_type(DType t);

}  // namespace rlx::tpu
