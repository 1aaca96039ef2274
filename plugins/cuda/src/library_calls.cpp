#include "library_calls.h"

#include "collective_call.h"
#include "dense_linalg_call.h"
#include "rlx/core/error.h"
#include "splat_call.h"

namespace rlx::cuda {

std::optional<Verdict> claim_library_op(const NodeSignature& s) {
  if (auto v = claim_splat(s)) return v;
  if (auto v = claim_collective(s)) return v;
  return claim_dense_linalg(s);
}

std::string library_call_vendor(const lir::CallKernel& call) {
  if (std::string v = splat_vendor(call); !v.empty()) return v;
  if (std::string v = collective_vendor(call); !v.empty()) return v;
  return dense_linalg_vendor(call);
}

std::unique_ptr<gpu_host::VendorCall> plan_library_call(CudaDevice& device,
                                                        const lir::CallKernel& call,
                                                        const lir::Program& program) {
  if (!dense_linalg_vendor(call).empty()) return plan_dense_linalg(device, call, program);
  if (!splat_vendor(call).empty()) return plan_splat(device, call, program);
  if (!collective_vendor(call).empty()) return plan_collective(device, call, program);
  throw_internal_error("cuda: no library plans the call " + call.callee);
}

}  // namespace rlx::cuda
