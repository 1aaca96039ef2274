// The ggml tensor types a GGUF file may name: sizes for every type (so a file's offsets can be
// checked even when rlx cannot decode a type), and how rlx holds each one: a dense dtype, a
// block format of rlx/core/quant.h, or neither.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "rlx/core/dtype.h"
#include "rlx/core/quant.h"

namespace rlx::gguf {

struct GgmlType {
  uint32_t id;
  std::string_view name;  // "q4_k"
  int64_t block_size;
  int64_t block_bytes;
  std::optional<DType> dense;         // f32 f16 bf16 i8 i16 i32 i64 f64: usable as a Tensor
  std::optional<quant::QType> quant;  // decodable block format (and f32/f16/bf16)
};

// nullptr for ids ggml never defined or has removed (4, 5, 31-33, 36-38).
const GgmlType* ggml_type(uint32_t id);

}  // namespace rlx::gguf
