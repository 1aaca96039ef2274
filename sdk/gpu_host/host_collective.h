// Collectives staged through the host on the GPU-style targets (rlx/core/host_collectives.h,
// docs/decisions.md 60): the claim of a collective that dispatch's rewrite marked for staging,
// the kHostCollectivesExtension table through which the user's permission and the host channel
// arrive, and the library call that runs such a node: download the operand, run the collective
// on the host channel (the cpu target's Gloo, reached only through core's Channel interface: no
// plugin links another), upload the result. One permission and one channel per plugin library,
// as the target object is one per process.
#pragma once
#include <memory>
#include <string>

#include "device_api.h"
#include "rlx/core/host_collectives.h"

namespace rlx::gpu_host {

// Whether a node (or library call) with these attributes is a collective marked for staging.
bool host_staged(const Attrs& attrs);

// The claim of `s`, a collective marked for staging, on target `target`: yes once the user
// allowed staging (HostCollectivesV1::allow) and the host channel can run it; else why not,
// naming --allow-host-collectives where that is what is missing.
Verdict claim_host_staged(const NodeSignature& s, const std::string& target);

// The extension's table (one per plugin library).
const HostCollectivesV1* host_collectives_v1();

// What the module plan names as the call's vendor (in the emitted source and profiles).
inline constexpr const char* kHostStagingVendor = "the host channel";

// Plans `call`, a staged collective, on `api`; the channel is looked up at each run, as the ranks
// join after the model compiles. The call's inputs then outputs are its operands.
std::unique_ptr<VendorCall> plan_host_collective(DeviceApi& api, const lir::CallKernel& call,
                                                 const lir::Program& program);

}  // namespace rlx::gpu_host
