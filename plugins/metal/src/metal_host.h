// The metal target's host: the SDK's DeviceApi (sdk/gpu_host/device_api.h) on Apple's Metal,
// written in Objective-C++ (metal_host.mm) and built only on Apple platforms (CMake defines
// RLX_METAL_HOST there). This header is plain C++ so metal_target.cpp, which every platform
// compiles, can reach the host without seeing an Objective-C type.
//
// The device is the system default (MTLCreateSystemDefaultDevice), opened once per process. A
// module is one MTLLibrary compiled from the target's MSL text with fast math off, and one compute
// pipeline per kernel, all created when the module is built so a compile error surfaces at
// compile time with the Metal compiler's log. Buffers live in shared storage, so uploads and
// downloads are memcpy through `contents` once the queued work is done. Launches dispatch groups
// of 64 threads (render.h: the cooperative kernels are written for exactly 64).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "device_api.h"

namespace rlx::metal {

// What the probe found: the device Metal would run on.
struct MetalDeviceInfo {
  std::string name;             // "Apple M2 Pro"
  bool unified_memory = false;  // Apple silicon and integrated GPUs: no copy over a bus
  uint64_t max_buffer_bytes = 0;
  uint32_t max_threads_per_group = 0;
  uint64_t threadgroup_memory_bytes = 0;
  // "integrated gpu" where memory is unified, else "discrete gpu" (DeviceInfo's words).
  std::string kind() const { return unified_memory ? "integrated gpu" : "discrete gpu"; }
};

// The system default Metal device, probed once; nullptr with `why` set when there is none.
const MetalDeviceInfo* probe_metal_device(std::string* why);

// The process's Metal device API (created on first call, shared by every executable); nullptr
// with `why` set when there is no device.
std::shared_ptr<gpu_host::DeviceApi> open_metal_device(std::string* why);

}  // namespace rlx::metal
