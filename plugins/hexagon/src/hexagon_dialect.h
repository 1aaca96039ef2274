// The C the hexagon target writes: the SDK's C dialect, freestanding. There is no C library on
// the DSP side of these programs, so the prelude includes the target's runtime header (which
// declares the float math it defines) instead of <math.h> and <string.h>; float sums accumulate in
// f64 as on the cpu.
#pragma once
#include "rlx/sdk/render.h"

namespace rlx::hexagon {

const sdk::Dialect& hexagon_dialect();

}  // namespace rlx::hexagon
