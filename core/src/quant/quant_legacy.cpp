// Decoders of the 32-element formats (ggml-common.h): Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL.
// In the 4- and 5-bit ones byte j holds element j in its low nibble and element j + 16 in its
// high nibble; Q5's fifth bits are a little-endian u32, bit j for element j.
#include "quant/quant_blocks.h"
#include "rlx/core/quant.h"

namespace rlx::quant::detail {

// {f16 d; u8 qs[16]}: x = d * (q - 8)
void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * ((qs[j] & 0xF) - 8);
    y[j + 16] = d * ((qs[j] >> 4) - 8);
  }
}

// {f16 d; f16 m; u8 qs[16]}: x = d * q + m
void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * (qs[j] & 0xF) + m;
    y[j + 16] = d * (qs[j] >> 4) + m;
  }
}

// {f16 d; u8 qh[4]; u8 qs[16]}: x = d * (q5 - 16)
void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint32_t qh = load_u32(b + 2);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int hi0 = ((qh >> j) << 4) & 0x10, hi1 = (qh >> (j + 12)) & 0x10;
    y[j] = d * (((qs[j] & 0xF) | hi0) - 16);
    y[j + 16] = d * (((qs[j] >> 4) | hi1) - 16);
  }
}

// {f16 d; f16 m; u8 qh[4]; u8 qs[16]}: x = d * q5 + m
void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b), m = load_f16(b + 2);
  const uint32_t qh = load_u32(b + 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const int hi0 = ((qh >> j) << 4) & 0x10, hi1 = (qh >> (j + 12)) & 0x10;
    y[j] = d * ((qs[j] & 0xF) | hi0) + m;
    y[j + 16] = d * ((qs[j] >> 4) | hi1) + m;
  }
}

// {f16 d; i8 qs[32]}: x = d * q
void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = d * qs[j];
}

// {f16 d; u8 qs[16]}: x = d * level[q]
void dequant_iq4_nl(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * kIQ4Levels[qs[j] & 0xF];
    y[j + 16] = d * kIQ4Levels[qs[j] >> 4];
  }
}

}  // namespace rlx::quant::detail
