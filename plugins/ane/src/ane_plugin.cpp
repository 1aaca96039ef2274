#include "ane_target.h"
#include "rlx/sdk/plugin.h"

RLX_DEFINE_TARGET_PLUGIN(rlx::ane::AneTarget)
