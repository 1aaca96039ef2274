// IEEE binary16 and bfloat16 conversions (round to nearest even), used wherever a 16-bit float
// is loaded into or stored from f32 arithmetic.
#pragma once
#include <cstdint>

namespace rlx {

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);

}  // namespace rlx
