#include "rlx/core/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "rlx/core/error.h"

namespace rlx::quant {

U8Params u8_params(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  U8Params p;
  if (!(hi > lo)) return p;  // all zeros (or NaN): any scale represents them
  p.scale = (hi - lo) / 255.0f;
  p.zero = static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / p.scale), 0.0f, 255.0f));
  return p;
}

void quantize_u8(const float* x, int64_t k, U8Params p, uint8_t* q) {
  for (int64_t i = 0; i < k; ++i) {
    const float v = std::nearbyint(x[i] / p.scale) + static_cast<float>(p.zero);
    q[i] = static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
  }
}

void quantize_int8_rows(const float* w, int64_t n, int64_t k, int8_t* q, float* scale) {
  for (int64_t r = 0; r < n; ++r) {
    const float* row = w + r * k;
    float amax = 0;
    for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(row[i]));
    const float s = amax > 0 ? amax / 127.0f : 1.0f;
    scale[r] = s;
    for (int64_t i = 0; i < k; ++i)
      q[r * k + i] = static_cast<int8_t>(std::clamp(std::nearbyint(row[i] / s), -127.0f, 127.0f));
  }
}

void quantize_int4_groups(const float* w, int64_t n, int64_t k, int64_t group, uint8_t* packed,
                          float* scale, uint8_t* zero) {
  RLX_CHECK(group > 0 && group % 2 == 0 && k % group == 0, "int4 groups must divide the row");
  const int64_t groups = k / group;
  std::memset(packed, 0, static_cast<size_t>(n * k / 2));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const float* x = w + r * k + g * group;
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < group; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
      const float s = hi > lo ? (hi - lo) / 15.0f : 1.0f;
      const float z = std::clamp(std::nearbyint(-lo / s), 0.0f, 15.0f);
      scale[r * groups + g] = s;
      zero[r * groups + g] = static_cast<uint8_t>(z);
      for (int64_t i = 0; i < group; ++i) {
        const auto v = static_cast<uint8_t>(std::clamp(std::nearbyint(x[i] / s) + z, 0.0f, 15.0f));
        const int64_t e = r * k + g * group + i;
        packed[e / 2] |= static_cast<uint8_t>(e % 2 ? v << 4 : v);
      }
    }
}

void int4_groups_to_blocks(const uint8_t* packed, const float* scale, const uint8_t* zero,
                           int64_t n, int64_t k, int64_t group, uint8_t* out) {
  const int64_t groups = k / group, block_bytes = 8 + group / 2;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t* b = out + (r * groups + g) * block_bytes;
      const float d = scale[r * groups + g];
      const float m = -d * static_cast<float>(zero[r * groups + g]);
      std::memcpy(b, &d, 4);
      std::memcpy(b + 4, &m, 4);
      std::memcpy(b + 8, packed + (r * k + g * group) / 2, static_cast<size_t>(group / 2));
    }
}

}  // namespace rlx::quant
