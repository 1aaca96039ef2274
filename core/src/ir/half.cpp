#include "rlx/core/half.h"

#include <bit>

namespace rlx {

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000 | (mant << 13);  // keeps the NaN payload
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: every one is a normal float, so shift the leading 1 into the implicit bit.
    uint32_t e = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7FFFFFFF;
  if (ax > 0x7F800000)  // NaN: force the quiet bit so a payload in the low bits cannot become Inf
    return sign | 0x7E00 | static_cast<uint16_t>((ax >> 13) & 0x3FF);
  // 65520 is the midpoint between 65504 (max half) and 2^16; ties go to the even side, Inf.
  if (ax >= 0x477FF000) return sign | 0x7C00;
  if (ax >= 0x38800000) {  // normal half (>= 2^-14)
    uint32_t odd = (ax >> 13) & 1;
    // Rebias 127 -> 15 and round to nearest even; a carry out of the mantissa bumps the exponent.
    ax += 0xC8000FFF + odd;
    return sign | static_cast<uint16_t>(ax >> 13);
  }
  if (ax <= 0x33000000) return sign;  // <= 2^-25: half of the smallest subnormal ties to 0
  // Subnormal half: value / 2^-24, rounded to nearest even.
  uint32_t e = ax >> 23;
  uint32_t m = (ax & 0x7FFFFF) | 0x800000;
  uint32_t shift = 126 - e;  // 14..24
  uint32_t r = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) ++r;
  return sign | static_cast<uint16_t>(r);
}

float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000)  // NaN: truncating could clear every payload bit
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace rlx
