// The layout `rlx quantize` writes into model.safetensors, read back as builder Weights. For a
// Linear weight named P.weight:
//   int8 (per output channel): P.weight i8 [N, K], P.weight_scale f32 [N];
//     calibrated (int8 static): also P.input_scale f32 [1], P.input_zero_point u8 [1], and
//     where the activations were smoothed, P.input_smooth f32 [K]: x * input_smooth is what the
//     u8 parameters describe (the weight's columns carry the inverse)
//   int4 (groups of g): P.weight u8 [N, K / 2] (two weights a byte, the first in the low
//     nibble), P.weight_scale f32 [N, K / g], P.weight_zero_point u8 [N, K / g]: w = s (q - z)
// The safetensors metadata key "rlx.quantization" names the scheme (for people and `rlx info`);
// the loader goes by the tensors.
#pragma once
#include <functional>
#include <string>

#include "rlx/frontends/builders.h"

namespace rlx::frontends {

inline constexpr const char* kScaleSuffix = "_scale";            // P.weight_scale
inline constexpr const char* kZeroSuffix = "_zero_point";        // P.weight_zero_point
inline constexpr const char* kInputScale = ".input_scale";       // P.input_scale
inline constexpr const char* kInputZero = ".input_zero_point";   // P.input_zero_point
inline constexpr const char* kInputSmooth = ".input_smooth";     // P.input_smooth

// Whether `name` is a scale or zero point that belongs to a quantized weight the source has.
bool quantized_part(const std::string& name, const std::function<bool(const std::string&)>& has);

// Completes w (w.dense already P.weight) from its companions: int8 gets scale (and the input
// parameters when present); int4 becomes i4_g{g} block rows. Throws a user error naming the
// tensor when shapes or dtypes disagree.
void read_quantized(const std::string& name, Weight& w,
                    const std::function<const Tensor*(const std::string&)>& find);

}  // namespace rlx::frontends
