// Little-endian field readers shared by the block decoders (blocks are byte-packed, so no
// field is aligned).
#pragma once
#include <cstdint>
#include <cstring>

#include "rlx/core/half.h"

namespace rlx::quant::detail {

inline float load_f16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return f16_to_f32(v);
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 16 non-uniform levels of IQ4_NL / IQ4_XS (kvalues_iq4nl in ggml-common.h).
inline constexpr int8_t kIQ4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

}  // namespace rlx::quant::detail
