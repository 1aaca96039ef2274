// The gpu target: LIR programs as OpenCL C (the SDK renderer's OpenCL dialect) run on any OpenCL
// 1.2+ device through the shared GPU host executor. It lowers no HIR op natively: every op takes
// its MIR decomposition, dot_general becomes a generated reduction kernel, gather and scatter
// come from the OpenCL C kernel library, while loops run their control flow on the host.
#include <fmt/format.h>

#include <fstream>

#include "device_executable.h"
#include "module_plan.h"
#include "opencl_device.h"
#include "opencl_library.h"
#include "signature.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/plugin.h"

namespace rlx::gpu {

namespace {

using gpu_host::uses;

class GpuTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "gpu"; }
  std::string version() const override { return "0.1.0"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return Verdict::no(fmt::format("gpu has no native kernel for {}: it runs the MIR decomposition", s.op));
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    const OpDef* def = OpRegistry::instance().find(s.op);
    if (!def || def->level != OpLevel::kMir) return Verdict::no(s.op + " is not a MIR primitive");
    if (uses(s, DType::kC64))
      return Verdict::no(fmt::format(
          "OpenCL C has no complex type, so gpu has no c64 kernel for {}: split complex values "
          "into real and imaginary parts before compiling",
          s.op));
    std::string why;
    auto device = OpenClDevice::shared(&why);
    // 16-bit floats are stored as bits and computed in f32 (render.h), so they need no
    // cl_khr_fp16; f64 needs cl_khr_fp64, and is never narrowed to f32 behind the user's back.
    // Decompositions write scalars as an f64 constant converted to the compute dtype, which
    // constant folding removes before lowering: those two are accepted, and compile() checks
    // that no f64 reached a kernel.
    bool scalar_pattern = s.op == "constant" || s.op == "convert";
    if (device && !device->info().fp64 && uses(s, DType::kF64) && !scalar_pattern)
      return Verdict::no(fmt::format("{} has no cl_khr_fp64, so gpu cannot compute {} in f64; convert "
                                     "the model to f32 first (rlx never narrows f64 silently)",
                                     device->info().describe(), s.op));
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    std::string why;
    auto device = OpenClDevice::shared(&why);
    if (!device) return Verdict::no(why);
    // Available, and the listing says on which device (RLX_OPENCL_DEVICE picks another).
    return Verdict{true, "OpenCL device " + device->info().describe()};
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    std::string why;
    auto device = OpenClDevice::shared(&why);
    if (!device)
      throw_user_error(fmt::format("gpu cannot run here: {}. `rlx compile --target gpu -o DIR` still writes "
                                   "the OpenCL C",
                                   why));
    if (!device->info().fp64)
      if (std::string at = gpu_host::dtype_use(program, DType::kF64); !at.empty())
        throw Error(ErrorKind::kCompile,
                    fmt::format("{} has no cl_khr_fp64, but {} of the compiled program is f64; convert the "
                                "model to f32 first (rlx never narrows f64 silently)",
                                device->info().describe(), at));
    return std::make_unique<gpu_host::DeviceExecutable>(device, program);
  }

  // The module exactly as compile() builds it: every kernel of the program in one OpenCL C file.
  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = dir / "gpu_kernels.cl";
    std::ofstream out(file);
    out << gpu_host::plan_module(program, opencl_c::opencl_library()).source;
    if (!out.flush()) throw_user_error(fmt::format("gpu: cannot write {}", file.string()));
    return {Artifact{"gpu_kernels.cl", "opencl-c"}};
  }
};

}  // namespace

}  // namespace rlx::gpu

RLX_DEFINE_TARGET_PLUGIN(rlx::gpu::GpuTarget)
