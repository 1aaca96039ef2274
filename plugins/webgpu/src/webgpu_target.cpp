// The webgpu target: LIR programs as WGSL compute shaders (the SDK renderer's WGSL dialect) run
// through the shared GPU host executor on wgpu-native, the WebGPU C API (opened with dlopen, so
// the plugin loads anywhere and says why it cannot run). Like vulkan it lowers no HIR op
// natively: every op takes its MIR decomposition, dot_general becomes a generated reduction
// kernel, gather and scatter come from the WGSL kernel library, while loops run on the host.
// `emit` also writes an ES module that runs the same WGSL in a browser (es_module.h).
//
// What WGSL cannot hold is refused by name, never narrowed: i8, u8, i16 always; i64 and f64
// unless the device enables wgpu-native's shader-int64 / shader-f64 (browsers never do, and
// RLX_WEBGPU_PORTABLE=1 asks for what browsers run); f64 transcendentals as on GLSL. Refused
// c64 and i64 primitives reach the kernels as f32 parts and i32 words instead (the split-complex
// and split-i64 rewrites, exact), through the bitcast view this target accepts.
#include <fmt/format.h>

#include <cstdlib>

#include "device_executable.h"
#include "es_module.h"
#include "module_plan.h"
#include "signature.h"
#include "target_plugin.h"
#include "webgpu_device.h"
#include "wgsl_library.h"

namespace rlx::webgpu {

namespace {

using gpu_host::uses;

class WebGpuTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  WebGpuTarget() : GpuLikeTargetPlugin("webgpu", "WGSL") {}

  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = common_refusals(s, /*f64_single_only=*/true); !v.ok) return v;
    if (Verdict v = sdk::refuse_narrow_integers(s, "WGSL", "webgpu"); !v.ok) return v;
    // Any other dtype the dialect has no type for (a dtype added after this table) is refused
    // here rather than failing when the kernel is rendered; a bitcast is a view, never rendered.
    if (s.op == "bitcast") return Verdict::yes();
    for (const auto* list : {&s.inputs, &s.outputs})
      for (const TensorType& t : *list)
        if (wgsl_library().dialect().storage_type[static_cast<int>(t.dtype)].empty())
          return Verdict::no(fmt::format("WGSL has no {0} type, so webgpu cannot compute the {0} values of {1}; "
                                         "convert them first (rlx never changes a dtype silently)",
                                         dtype_name(t.dtype), s.op));
    std::string why;
    const WebGpuInfo* device = portable_only() ? nullptr : WebGpuDevice::probe(&why);
    struct Need {
      DType dtype;
      bool have;
      const char* feature;
      const char* what;
    };
    const Need needs[] = {{DType::kI64, device && device->int64, "shader-int64", "64-bit integers"},
                          {DType::kF64, device && device->f64, "shader-f64", "64-bit floats"}};
    for (const Need& n : needs) {
      if (n.have || !uses(s, n.dtype)) continue;
      std::string context = portable_only()
                                ? "RLX_WEBGPU_PORTABLE asks for what browsers run"
                                : device ? fmt::format("{} lacks it", device->describe())
                                         : fmt::format("no WebGPU device was found ({})", why);
      return Verdict::no(fmt::format("WGSL has no {} without wgpu-native's {} feature ({}), so webgpu cannot hold "
                                     "the {} values of {}; convert them first (rlx never narrows a dtype "
                                     "silently)",
                                     n.what, n.feature, context, dtype_name(n.dtype), s.op));
    }
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    std::string why;
    const WebGpuInfo* device = WebGpuDevice::probe(&why);
    return device_status(device != nullptr, why, device ? device->describe() : "");
  }

  std::optional<DeviceInfo> describe_device() const override {
    std::string why;
    const WebGpuInfo* d = WebGpuDevice::probe(&why);
    if (!d) return std::nullopt;
    // wgpu-native reaches a software device through a native API: Mesa's llvmpipe through
    // Vulkan is lavapipe, through OpenGL llvmpipe.
    const bool software = d->kind == "cpu";
    const bool vulkan = d->backend == "Vulkan";
    return DeviceInfo{d->name, d->kind,
                      software ? gpu_host::software_renderer_name(d->name, vulkan, d->name) : "",
                      software};
  }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override {
    return WebGpuDevice::shared(why);
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api("the WGSL and the ES module"), program);
  }

  // The module exactly as compile() builds it (every kernel's WGSL in one file, sections
  // starting at `//@rlx-kernel <symbol>`), and the ES module that runs it in a browser.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    gpu_host::ModulePlan plan = gpu_host::plan_module(program, wgsl_library());
    std::vector<Artifact> artifacts = {
        write_module(dir, "webgpu_kernels.wgsl", "wgsl", complete_wgsl_module(plan.source))};
    for (Artifact& a : write_es_module(program, plan, dir)) artifacts.push_back(a);
    return artifacts;
  }
};

}  // namespace

}  // namespace rlx::webgpu

RLX_DEFINE_TARGET_PLUGIN(rlx::webgpu::WebGpuTarget)
