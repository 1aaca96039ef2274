// Curves drawn into images for users who look at pictures, not numbers (`rlx train --plot`,
// `rlx splat-fit`): written with write_png (rlx/core/png.h).
#pragma once
#include <cstdint>
#include <vector>

#include "rlx/core/tensor.h"

namespace rlx {

// The loss curve as an RGB image (u8 [height, width, 3]; log scale, a grid line per decade).
Tensor loss_plot(const std::vector<double>& losses, int64_t width = 640, int64_t height = 360);

}  // namespace rlx
