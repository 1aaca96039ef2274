#include "opencl_legality.h"

#include "rlx/sdk/legality.h"

namespace rlx::gpu {

Verdict fp64_verdict(const NodeSignature& s, bool device_has_fp64, const std::string& device) {
  const bool scalar_pattern = s.op == "constant" || s.op == "convert";
  if (device_has_fp64 || scalar_pattern || !sdk::uses(s, DType::kF64)) return Verdict::yes();
  return sdk::refuse_f64(device + " has no cl_khr_fp64", "gpu", s.op);
}

}  // namespace rlx::gpu
