// Decoder of rlx's own int4 group formats (i4_g32, i4_g64, i4_g128; rlx/core/quant.h): the
// storage `rlx quantize --scheme int4-weight` writes, asymmetric per group of g weights.
#include <cstring>

#include "rlx/core/quant.h"

namespace rlx::quant::detail {

// {f32 d; f32 m; u8 qs[g / 2]}: x = d * q + m, element 2j in the low nibble of byte j.
void dequant_i4_group(const uint8_t* b, float* y, int group) {
  float d, m;
  std::memcpy(&d, b, 4);
  std::memcpy(&m, b + 4, 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < group / 2; ++j) {
    y[2 * j] = d * static_cast<float>(qs[j] & 0xF) + m;
    y[2 * j + 1] = d * static_cast<float>(qs[j] >> 4) + m;
  }
}

}  // namespace rlx::quant::detail
