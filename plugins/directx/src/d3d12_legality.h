// What a Direct3D 12 device adds to the HLSL language's refusals (vulkan::shader_legality with no
// device): a dtype whose shader capability the device lacks is refused with the capability named,
// never narrowed. f64 needs DoublePrecisionFloatShaderOps, i64 (and integer pow, which runs in 64
// bits) Int64ShaderOps, the 16-bit dtypes Native16BitShaderOpsSupported.
#pragma once
#include <string>

#include "d3d12_info.h"
#include "rlx/core/target.h"

namespace rlx::directx {

Verdict d3d12_legality(const std::string& target, const NodeSignature& s, const D3D12Info& device);

}  // namespace rlx::directx
