// Element types. Quantized storage types get their own enumerators in the quantization issue;
// the numbering leaves room for them after kC64.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace rlx {

enum class DType : uint8_t {
  kBool, kI8, kU8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64, kC64,
  // Unsigned integers wider than a byte (safetensors' U16/U32/U64, ONNX's UINT16/32/64).
  kU16, kU32, kU64,
};
inline constexpr int kNumDTypes = 14;

std::string_view dtype_name(DType t);                       // "f32"
std::optional<DType> parse_dtype(std::string_view name);    // "f32" -> kF32
size_t dtype_size(DType t);                                 // bytes per element
bool is_float(DType t);    // f16 bf16 f32 f64
bool is_integer(DType t);  // i8..i64 u8..u64 (not bool)
bool is_unsigned(DType t);  // u8 u16 u32 u64
bool is_complex(DType t);
// Every dtype in enum order, for legality tables and table-driven tests.
const DType* all_dtypes();

}  // namespace rlx
