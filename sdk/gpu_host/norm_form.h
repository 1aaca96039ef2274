// The form render_norm and the products that compute a norm first take a native LayerNorm or
// RMSNorm call in (module_plan.cpp's planning).
#pragma once
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

// A native LayerNorm or RMSNorm call as the shape render_norm takes, its distinct storage
// buffers numbered by position.
struct NormCall {
  sdk::NormShape shape;
  std::vector<int32_t> buffers;
};

NormCall norm_call(const lir::CallKernel& c, const lir::Program& p, const std::string& name);

}  // namespace rlx::gpu_host
