// Decoders of the 256-element "super-block" formats (ggml-common.h, QK_K = 256): Q2_K .. Q8_K
// and IQ4_XS. Loops follow ggml's dequantize_row_* so the element order is the reference one.
#include "quant/quant_blocks.h"
#include "rlx/core/quant.h"

namespace rlx::quant::detail {

namespace {

// Q4_K / Q5_K: eight 6-bit (scale, min) pairs packed in 12 bytes (get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace

// {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}: x = d * (sc & 15) * q2 - dmin * (sc >> 4)
void dequant_q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = load_f16(b + 80), dmin = load_f16(b + 82);
  int is = 0;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = scales[is++];
        const float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
      }
    }
  }
}

// {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: x = d * (s6 - 32) * (q2 - (hbit ? 0 : 4))
void dequant_q3_k(const uint8_t* b, float* y) {
  const uint8_t* hm = b;
  const uint8_t* q = b + 32;
  const uint8_t* s = b + 96;
  const float d = load_f16(b + 108);
  int scales[16];
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (lo | (hi << 4)) - 32;
  }
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d * scales[is++];
        for (int l = 16 * half; l < 16 * half + 16; ++l)
          *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
      }
    }
  }
}

// {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: x = d * sc * q4 - dmin * m
void dequant_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int is = 0; is < 8; is += 2, q += 32) {
    int sc, m;
    scale_min_k4(is, scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
  }
}

// {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: x = d * sc * q5 - dmin * m
void dequant_q5_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* ql = b + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
    int sc, m;
    scale_min_k4(is, scales, &sc, &m);
    const float d1 = d * sc, m1 = dmin * m;
    scale_min_k4(is + 1, scales, &sc, &m);
    const float d2 = d * sc, m2 = dmin * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
  }
}

// {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: x = d * sc * (q6 - 32)
void dequant_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * sc[is] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
  }
}

// {f32 d; i8 qs[256]; i16 bsums[16]}: x = d * q (bsums only speed up dot products)
void dequant_q8_k(const uint8_t* b, float* y) {
  float d;
  std::memcpy(&d, b, 4);
  const auto* qs = reinterpret_cast<const int8_t*>(b + 4);
  for (int j = 0; j < 256; ++j) y[j] = d * qs[j];
}

// {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: x = d * (s6 - 32) * level[q]
void dequant_iq4_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  uint16_t scales_h;
  std::memcpy(&scales_h, b + 2, 2);
  const uint8_t* scales_l = b + 4;
  const uint8_t* qs = b + 8;
  for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
    const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xF) | (((scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * (ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * kIQ4Levels[qs[j] & 0xF];
      y[j + 16] = dl * kIQ4Levels[qs[j] >> 4];
    }
  }
}

}  // namespace rlx::quant::detail
