// PNG files as u8 tensors, through libpng's simplified API (docs/decisions.md says why).
#pragma once
#include <filesystem>

#include "rlx/core/tensor.h"

namespace rlx {

// The image as u8 [height, width, 3] (RGB; grey and palette images are expanded, alpha is
// composited over black). A user error names the file and what libpng said.
Tensor read_png_rgb(const std::filesystem::path& file);
// Writes u8 [height, width, 3] (RGB) or [height, width] (grey).
void write_png(const std::filesystem::path& file, const Tensor& image);

// Between u8 [H,W,3] and f32 in [0, 1] (rounded to nearest, clamped).
Tensor u8_to_unit_f32(const Tensor& image);
Tensor unit_f32_to_u8(const Tensor& image);

}  // namespace rlx
