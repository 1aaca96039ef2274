// What a target's device can say about the work it runs: the device memory the target holds (now
// and at most so far) and the device's own clock around a piece of queued work (CUDA events).
// `rlx bench` reports what a target answers through Target::extension under
// kDeviceStatsExtension, version kDeviceStatsVersion (cuda: both; vulkan: memory); a target
// without an answer (cpu, or a device API that keeps neither) is timed on the host clock and
// reports the process's RSS only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "rlx/core/error.h"
#include "rlx/core/target.h"

namespace rlx {

inline constexpr const char* kDeviceStatsExtension = "rlx.device_stats";
inline constexpr uint32_t kDeviceStatsVersion = 1;

// The layout of version 1, owned by the target. The functions are noexcept (they cross the plugin
// boundary unguarded) and return nullptr on success, else why not (a message that lives as long
// as the target). A null function is a question the device does not answer.
struct DeviceStatsV1 {
  // Bytes of device memory the target holds (weights, arenas, caches, vendor workspaces): now
  // and the most it has held since it opened the device.
  const char* (*memory)(void* context, uint64_t* bytes, uint64_t* peak_bytes) = nullptr;
  // clock_start queues a timestamp behind the work queued so far; clock_stop queues another,
  // waits for it and writes the device time between the two in milliseconds.
  const char* (*clock_start)(void* context) = nullptr;
  const char* (*clock_stop)(void* context, double* ms) = nullptr;
  void* context = nullptr;
};

// The target's answer, or nullptr.
inline const DeviceStatsV1* device_stats(const Target& target) {
  return static_cast<const DeviceStatsV1*>(
      target.extension(kDeviceStatsExtension, kDeviceStatsVersion));
}

// Throws rlx::Error (kDevice) with the device's reason when a call failed.
inline void check_device_stats(const char* why, const std::string& target) {
  if (why) throw Error(ErrorKind::kDevice, target + ": " + why);
}

}  // namespace rlx
