// Which device a target computes on, and whether that device is software: a rasterizer or
// OpenCL runtime emulating a GPU on the host's cores (lavapipe, llvmpipe, PoCL, SwiftShader),
// usually slower than the cpu target. A target answers through Target::extension under
// kDeviceInfoExtension, version kDeviceInfoVersion; one without an answer is "not known".
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "rlx/core/target.h"

namespace rlx {

inline constexpr const char* kDeviceInfoExtension = "rlx.device_info";
inline constexpr uint32_t kDeviceInfoVersion = 1;

// The layout of version 1; the strings are owned by the target and live as long as it does.
struct DeviceInfoV1 {
  const char* name = "";  // "llvmpipe (LLVM 15.0.6, 256 bits)"
  const char* kind = "";  // "discrete gpu", "integrated gpu", "cpu" (the device's own word)
  int32_t software = 0;   // 1: emulated on the host's CPU
  const char* software_name = "";  // what the emulation is called: "lavapipe", "PoCL", ...
};

struct DeviceInfo {
  std::string name, kind, software_name;
  bool software = false;
};

// The target's answer, or nullopt when it gives none (the cpu target, codegen-only targets).
inline std::optional<DeviceInfo> device_info(const Target& target) {
  const auto* v1 =
      static_cast<const DeviceInfoV1*>(target.extension(kDeviceInfoExtension, kDeviceInfoVersion));
  if (!v1) return std::nullopt;
  return DeviceInfo{v1->name ? v1->name : "", v1->kind ? v1->kind : "",
                    v1->software_name ? v1->software_name : "", v1->software != 0};
}

}  // namespace rlx
