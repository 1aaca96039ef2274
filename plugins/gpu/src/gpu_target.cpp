// The gpu target: LIR programs as OpenCL C (the SDK renderer's OpenCL dialect) run on any OpenCL
// 1.2+ device through the shared GPU host executor. It lowers no HIR op natively: every op takes
// its MIR decomposition, dot_general becomes a generated reduction kernel, gather and scatter
// come from the OpenCL C kernel library, while loops run their control flow on the host.
#include <fmt/format.h>

#include "device_executable.h"
#include "module_plan.h"
#include "opencl_device.h"
#include "opencl_legality.h"
#include "opencl_library.h"
#include "rlx/core/error.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"
#include "signature.h"
#include "target_plugin.h"

namespace rlx::gpu {

namespace {

class GpuTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  GpuTarget() : GpuLikeTargetPlugin("gpu", "OpenCL C") {}

  const sdk::Dialect* kernel_dialect() const override { return &sdk::opencl_dialect(); }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = common_refusals(s); !v.ok) return v;
    std::string why;
    auto device = OpenClDevice::shared(&why);
    if (!device) return Verdict::yes();  // codegen-only: the OpenCL C itself is legal
    return fp64_verdict(s, device->info().fp64, device->info().describe());
  }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    return OpenClDevice::shared(why);
  }

  // An OpenCL device that is not CL_DEVICE_TYPE_GPU computes on the host's cores (PoCL's
  // pthread device, a CPU runtime).
  std::optional<DeviceInfo> describe_device() const override {
    std::string why;
    auto d = OpenClDevice::shared(&why);
    if (!d) return std::nullopt;
    const OpenClDeviceInfo& i = d->info();
    std::string software;
    if (!i.gpu)
      software =
          i.platform.find("Portable Computing Language") != std::string::npos ? "PoCL" : i.platform;
    return DeviceInfo{i.name, i.gpu ? "gpu" : "cpu", software, !i.gpu};
  }

  Verdict can_execute() const override {
    std::string why;
    auto device = OpenClDevice::shared(&why);
    // Available, and the listing says on which device (RLX_OPENCL_DEVICE picks another).
    return device_status(device != nullptr, why, device ? "OpenCL device " + device->info().describe() : "");
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    std::shared_ptr<gpu_host::DeviceApi> api = device_api("the OpenCL C");
    auto device = std::static_pointer_cast<OpenClDevice>(api);
    if (!device->info().fp64) sdk::check_no_f64(program, device->info().describe() + " has no cl_khr_fp64");
    return std::make_unique<gpu_host::DeviceExecutable>(api, program);
  }

  // The module exactly as compile() builds it: every kernel of the program in one OpenCL C file.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    return {write_module(dir, "gpu_kernels.cl", "opencl-c",
                         gpu_host::plan_module(program, opencl_c::opencl_library()).source)};
  }
};

}  // namespace

}  // namespace rlx::gpu

RLX_DEFINE_TARGET_PLUGIN(rlx::gpu::GpuTarget)
