// The form render_attention and a library's own attention kernels take a native Attention call
// in (module_plan.cpp's planning).
#pragma once
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

// A native Attention call (the HIR op the GPU-style targets claim, target_plugin.cpp) as the
// shape render_attention takes, its distinct storage buffers numbered by position.
struct AttentionCall {
  sdk::AttentionShape shape;
  std::vector<int32_t> buffers;
};

AttentionCall attention_call(const lir::CallKernel& c, const lir::Program& p,
                             const std::string& name);

}  // namespace rlx::gpu_host
