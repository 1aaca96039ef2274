// ONNX element types rlx has no dtype for, carried in one it has: the 8- and 4-bit floats
// (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT4E2M1) as their bit patterns,
// one u8 code per element, and the 4- and 2-bit integers (INT4, UINT4, INT2, UINT2) as their
// values in i8 / u8, unpacked. Only conversions (Cast, CastLike, QuantizeLinear,
// DequantizeLinear) and data movement accept them; the conversions encode and decode exactly,
// with the rounding and saturation ONNX specifies.
#pragma once
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "rlx/core/builder.h"

namespace rlx::onnx {

struct CarriedType {
  int onnx_type;
  DType storage;    // u8 codes, or i8/u8 values
  int bits;         // 8, 4 or 2: elements per byte when packed in a TensorProto
  bool float_code;  // a small float stored as its code
  bool is_signed;   // the integer types
};
std::optional<CarriedType> carried_type(int onnx_type);

// Unpacks TensorProto data of a carried type (raw_data or int32_data, packed low bits first for
// 4- and 2-bit types) into its storage tensor.
Tensor carried_from_proto(const ::onnx::TensorProto& t, const CarriedType& c, int64_t numel,
                          const std::string& where);

// codes (u8) of a small float type -> f32 values.
ValueId decode_small_float(GraphBuilder& b, ValueId codes, int onnx_type);
// x (f32 or f64) -> u8 codes, round to nearest even, with ONNX's saturate semantics.
ValueId encode_small_float(GraphBuilder& b, ValueId x, int onnx_type, bool saturate);
// Integer values (i64) wrapped to a carried integer type's width, in its storage dtype.
ValueId wrap_small_int(GraphBuilder& b, ValueId v, const CarriedType& c);
// The representable range of a carried integer type (for saturating quantization).
std::pair<double, double> small_int_range(const CarriedType& c);

}  // namespace rlx::onnx
