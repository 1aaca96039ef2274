// The 16-bit float conversions of rlx/core/half.h, bit for bit, as inline code without branches
// or calls, so the GEMM's per-ISA loops (gemm_kernels.inc) can vectorise a row's conversions:
// core's out-of-line calls cost more than the f32 product itself on narrow-typed models. The
// subnormal cases are done by one exact f32 addition or subtraction (the trick of biasing the
// value into a range where the hardware's rounding is the wanted one), which is exact under the
// default rounding mode; rlx never sets flush-to-zero in the threads that run these.
#pragma once
#include <bit>
#include <cstdint>

namespace rlx::cpu {

inline float bf16_widen_inline(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}

inline uint16_t bf16_round_inline(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (x + 0x7FFF + ((x >> 16) & 1)) >> 16;
  const uint32_t quiet = (x >> 16) | 0x40;  // a NaN keeps a payload bit
  return static_cast<uint16_t>((x & 0x7FFFFFFF) > 0x7F800000 ? quiet : rounded);
}

inline float f16_widen_inline(uint16_t h) {
  const uint32_t em = uint32_t(h & 0x7FFF) << 13;  // exponent and mantissa in f32 places
  const uint32_t exp = em & 0x0F800000;
  const uint32_t normal = em + ((127 - 15) << 23);
  const uint32_t special = em + ((255 - 31) << 23);  // Inf, NaN (payload kept)
  // A subnormal (or zero) as a normal f32 with exponent 113 - 1, minus 2^-14: exact.
  const float sub = std::bit_cast<float>(em + (113u << 23)) - std::bit_cast<float>(113u << 23);
  const uint32_t bits = exp == 0x0F800000 ? special
                        : exp == 0        ? std::bit_cast<uint32_t>(sub)
                                          : normal;
  return std::bit_cast<float>(bits | (uint32_t(h & 0x8000) << 16));
}

inline uint16_t f16_round_inline(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7FFFFFFF;
  // Normal halves (and the overflow to Inf, which the carry into the exponent reaches): rebias
  // and round to nearest even in integer arithmetic.
  const uint32_t normal = (ax + 0xC8000FFF + ((ax >> 13) & 1)) >> 13;
  // Below 2^-14: adding 0.5 makes the f32 sum's last mantissa bits the half's subnormal bits,
  // rounded to nearest even by the addition itself.
  const uint32_t sub = std::bit_cast<uint32_t>(std::bit_cast<float>(ax) + 0.5f) - 0x3F000000;
  const uint32_t nan = 0x7E00 | ((ax >> 13) & 0x3FF);
  const uint32_t bits = ax > 0x7F800000    ? nan
                        : ax >= 0x477FF000 ? 0x7C00
                        : ax >= 0x38800000 ? normal
                                           : sub;
  return static_cast<uint16_t>(sign | bits);
}

}  // namespace rlx::cpu
