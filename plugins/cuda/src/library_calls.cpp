#include "library_calls.h"

#include "dense_linalg_call.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

std::optional<Verdict> claim_library_op(const NodeSignature& s) {
  return claim_dense_linalg(s);
}

std::string library_call_vendor(const lir::CallKernel& call) {
  return dense_linalg_vendor(call);
}

std::unique_ptr<gpu_host::VendorCall> plan_library_call(CudaDevice& device,
                                                        const lir::CallKernel& call,
                                                        const lir::Program& program) {
  if (!dense_linalg_vendor(call).empty()) return plan_dense_linalg(device, call, program);
  throw_internal_error("cuda: no library plans the call " + call.callee);
}

}  // namespace rlx::cuda
