// The opengl target: LIR programs as GLSL 4.30 compute shaders (the SDK renderer's OpenGL GLSL
// dialect) run through the shared GPU host executor on an OpenGL 4.3 context made without a
// window (EGL surfaceless; llvmpipe on CPUs). OpenGL has no 8- or 16-bit storage buffers: bool,
// f16 and bf16 are packed in 32-bit words as the host lays them out; i8, u8 and i16 are refused
// (never widened behind the user's back); i64 needs GL_ARB_gpu_shader_int64.
#include <fmt/format.h>

#include "device_executable.h"
#include "gl_device.h"
#include "glsl_library.h"
#include "module_plan.h"
#include "signature.h"
#include "target_plugin.h"
#include "rlx/core/error.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"

namespace rlx::opengl {

namespace {

using gpu_host::uses;

class OpenGlTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  OpenGlTarget() : GpuLikeTargetPlugin("opengl", "GLSL") {}

  const sdk::Dialect* kernel_dialect() const override { return &sdk::glsl_opengl_dialect(); }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    // bool, f16 and bf16 are packed in 32-bit words; i8, u8 and i16 would need 8/16-bit
    // arithmetic types to wrap in, which OpenGL's GLSL lacks (said first: it names the way out).
    if (Verdict v = sdk::refuse_narrow_integers(s, "OpenGL 4.3", "opengl", "use --target vulkan, or "); !v.ok)
      return v;
    // Not a MIR primitive, complex values, GLSL's f32-only ops at f64, dtypes without storage.
    if (Verdict v = common_refusals(s, /*f64_single_only=*/true); !v.ok) return v;
    std::string why;
    auto device = GlDevice::shared(&why);
    bool wide = uses(s, DType::kI64) || (s.op == "pow" && !s.outputs.empty() && is_integer(s.outputs[0].dtype));
    if (device && wide && !device->info().int64)
      return Verdict::no(fmt::format("{} lacks GL_ARB_gpu_shader_int64, so opengl cannot compute {} in 64-bit "
                                     "integers",
                                     device->info().describe(), s.op));
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    std::string why;
    bool found = GlDevice::shared(&why) != nullptr;
    return device_status(found, why);
  }

  // OpenGL has no device type: a software renderer is known by its name.
  std::optional<DeviceInfo> describe_device() const override {
    std::string why;
    auto d = GlDevice::shared(&why);
    if (!d) return std::nullopt;
    const std::string& renderer = d->info().renderer;
    std::string software = gpu_host::software_renderer_name(renderer, false, "");
    return DeviceInfo{renderer, software.empty() ? "gpu" : "cpu", software, !software.empty()};
  }

  std::shared_ptr<gpu_host::DeviceApi> open_device_api(std::string* why) override { return GlDevice::shared(why); }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<gpu_host::DeviceExecutable>(device_api("the GLSL"), program);
  }

  // The module exactly as compile() builds it: every kernel's compute shader in one file,
  // sections starting at `//@rlx-kernel <symbol>`.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    return {write_module(dir, "opengl_kernels.comp", "glsl",
                         gpu_host::plan_module(program, glsl::glsl_opengl_library()).source)};
  }
};

}  // namespace

}  // namespace rlx::opengl

RLX_DEFINE_TARGET_PLUGIN(rlx::opengl::OpenGlTarget)
