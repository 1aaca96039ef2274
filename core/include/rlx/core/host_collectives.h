// Collectives staged through the host, for a target without a collective engine of its own
// (docs/parallel.md, "Host-staged collectives"; docs/decisions.md 60). A collective is never
// staged silently: dispatch's rewrite `host-staged-collective` marks a collective node the
// target refused with kStagingAttr = "host", and a target claims the marked node only when the
// user allowed it (`--allow-host-collectives`) through this extension. Each run of such a node
// copies its operand to the host, runs the collective on a Channel opened on a host target (the
// cpu target's Gloo) and copies the result back.
//
// A target answers Target::extension(kHostCollectivesExtension, kHostCollectivesVersion) when it
// can stage collectives; the sdk's GPU-style targets do (sdk/gpu_host/host_collective.h).
#pragma once
#include <cstdint>

#include "rlx/core/device.h"
#include "rlx/core/target.h"

namespace rlx {

inline constexpr const char* kHostCollectivesExtension = "rlx.host_collectives";
inline constexpr uint32_t kHostCollectivesVersion = 1;

// The attribute the rewrite sets on a staged collective, and its one value.
inline constexpr const char* kStagingAttr = "staging";
inline constexpr const char* kStagingHost = "host";

// The layout of version 1, owned by the target. The functions are noexcept (they cross the plugin
// boundary unguarded).
struct HostCollectivesV1 {
  // From now on, the target claims collectives marked for host staging (call before compiling).
  void (*allow)(void* context) = nullptr;
  // The channel the staged collectives of this process run on: a Channel on host memory
  // (DeviceBuffer::handle is a host pointer), such as the cpu target's. The caller keeps it
  // alive while programs run, and passes nullptr before releasing it.
  void (*use_channel)(void* context, Channel* channel) = nullptr;
  void* context = nullptr;
};

// The target's answer, or nullptr when it cannot stage collectives.
inline const HostCollectivesV1* host_collectives(const Target& target) {
  return static_cast<const HostCollectivesV1*>(
      target.extension(kHostCollectivesExtension, kHostCollectivesVersion));
}

}  // namespace rlx
