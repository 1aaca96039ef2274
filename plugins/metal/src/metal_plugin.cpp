// The plugin's entry point; the target itself is metal_target.cpp (shared with the tests).
#include "metal_target.h"
#include "rlx/sdk/plugin.h"

RLX_DEFINE_TARGET_PLUGIN(rlx::metal::MetalTarget)
