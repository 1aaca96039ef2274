#include "d3d12_legality.h"

#include <fmt/format.h>

#include "signature.h"

namespace rlx::directx {

Verdict d3d12_legality(const std::string& target, const NodeSignature& s, const D3D12Info& device) {
  struct Need {
    DType dtype;
    bool have;
    const char* cap;
  };
  const Need needs[] = {
      {DType::kF64, device.fp64, "DoublePrecisionFloatShaderOps"},
      {DType::kI64, device.int64, "Int64ShaderOps"},
      {DType::kU64, device.int64, "Int64ShaderOps"},
      {DType::kF16, device.native16, "Native16BitShaderOpsSupported"},
      {DType::kBF16, device.native16, "Native16BitShaderOpsSupported"},
      {DType::kI16, device.native16, "Native16BitShaderOpsSupported"},
      {DType::kU16, device.native16, "Native16BitShaderOpsSupported"},
  };
  for (const Need& n : needs)
    if (!n.have && gpu_host::uses(s, n.dtype))
      return Verdict::no(fmt::format("{} lacks {}, so {} cannot hold the {} values of {}; convert them first "
                                     "(rlx never changes a dtype silently)",
                                     device.describe(), n.cap, target, dtype_name(n.dtype), s.op));
  bool wide = s.op == "pow" && !s.outputs.empty() && is_integer(s.outputs[0].dtype);
  if (wide && !device.int64)
    return Verdict::no(fmt::format("{} lacks Int64ShaderOps, which {}'s integer pow kernel needs", device.describe(), target));
  return Verdict::yes();
}

}  // namespace rlx::directx
