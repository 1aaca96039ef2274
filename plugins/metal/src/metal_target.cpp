#include "metal_target.h"

#include "module_plan.h"
#include "msl_library.h"
#include "device_executable.h"
#include "signature.h"
#include "rlx/sdk/legality.h"

#ifdef RLX_METAL_HOST
#include "metal_host.h"
#endif

namespace rlx::metal {

namespace {

constexpr const char* kNoDouble = "MSL has no 64-bit float";

}  // namespace

Verdict MetalTarget::accepts_primitive(const NodeSignature& s) const {
  if (Verdict v = common_refusals(s); !v.ok) return v;
  // Decompositions write scalars as an f64 constant converted to the compute dtype, which
  // constant folding removes before lowering: those two are accepted, and emit() and compile()
  // check that no f64 reached a kernel.
  if (gpu_host::uses(s, DType::kF64) && s.op != "constant" && s.op != "convert")
    return sdk::refuse_f64(kNoDouble, "metal", s.op);
  return Verdict::yes();
}

Verdict MetalTarget::can_execute() const {
#ifdef RLX_METAL_HOST
  std::string why;
  const MetalDeviceInfo* device = probe_metal_device(&why);
  return device_status(device != nullptr, why + "; `rlx compile --target metal -o DIR` writes the MSL",
                       device ? "Metal device " + device->name : "");
#else
  return Verdict::no(kNoMetal);
#endif
}

std::optional<DeviceInfo> MetalTarget::describe_device() const {
#ifdef RLX_METAL_HOST
  if (const MetalDeviceInfo* device = probe_metal_device(nullptr))
    return DeviceInfo{device->name, device->kind(), "", false};
#endif
  return std::nullopt;
}

std::unique_ptr<Executable> MetalTarget::compile(const lir::Program& program) {
  sdk::check_no_f64(program, kNoDouble);
  return std::make_unique<gpu_host::DeviceExecutable>(device_api("the MSL"), program);
}

std::vector<Artifact> MetalTarget::emit(const lir::Program& program, const std::filesystem::path& dir) {
  sdk::check_no_f64(program, kNoDouble);
  return {write_module(dir, kModuleFile, "msl", gpu_host::plan_module(program, msl_library()).source)};
}

std::shared_ptr<gpu_host::DeviceApi> MetalTarget::open_device_api(std::string* why) {
#ifdef RLX_METAL_HOST
  return open_metal_device(why);  // metal_host.mm
#else
  *why = "Metal runs only on Apple platforms (macOS, iOS)";
  return nullptr;
#endif
}

}  // namespace rlx::metal
