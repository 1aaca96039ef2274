// Legality questions every GPU-like target asks of a node signature: the SDK's (legality.h).
#pragma once
#include "rlx/sdk/legality.h"

namespace rlx::gpu_host {

using sdk::uses;

}  // namespace rlx::gpu_host
