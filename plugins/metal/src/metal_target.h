// The metal target: Apple GPUs through Metal. Kernels are MSL from the SDK's one renderer (the
// MSL dialect) plus the target's gather and scatter (msl_library.h). Its host (metal_host.h:
// MTLDevice, pipelines from the MSL library, command buffers) is Objective-C++ and is built only
// on Apple platforms (RLX_METAL_HOST); elsewhere the target is codegen-only: `rlx compile
// --target metal -o DIR` writes the module. The class is in a header so the tests can give it a
// device (open_device_api) that runs the MSL on this machine compiled as C++ (plugins/metal/tests).
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "target_plugin.h"

namespace rlx::metal {

// Why there is no Metal device here (the status's reason off Apple platforms).
inline constexpr const char* kNoMetal =
    "Metal runs only on Apple platforms (macOS, iOS); `rlx compile --target metal -o DIR` writes the MSL";
// The emitted module's file name.
inline constexpr const char* kModuleFile = "metal_kernels.metal";

class MetalTarget : public gpu_host::GpuLikeTargetPlugin {
 public:
  MetalTarget() : GpuLikeTargetPlugin("metal", "MSL") {}

  // common refusals (complex named), then f64 by name: MSL has no double.
  Verdict accepts_primitive(const NodeSignature& s) const override;
  // Off Apple platforms codegen-only (kNoMetal); on them the probe's answer, naming the device.
  Verdict can_execute() const override;
  // Runs the program on the DeviceApi open_device_api gives (none: throws saying why).
  std::unique_ptr<Executable> compile(const lir::Program& program) override;
  // metal_kernels.metal: the module exactly as compile() would build it.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override;

 protected:
  std::optional<DeviceInfo> describe_device() const override;
  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override;
};

}  // namespace rlx::metal
