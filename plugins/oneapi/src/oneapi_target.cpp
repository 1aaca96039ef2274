// The oneapi target: Intel GPUs through Level Zero. Kernels are the gpu target's OpenCL C (the
// same module text, from the shared OpenCL C kernel library), compiled to SPIR-V for
// zeModuleCreate. There is no Level Zero executor yet, so the target is codegen-only everywhere;
// its status says whether a Level Zero GPU was found. Where none is, its SPIR-V is validated
// (spirv-val, ocloc) and its OpenCL C runs on the gpu target (tests/targets/oneapi).
#include <fmt/format.h>

#include <fstream>

#include "level_zero_probe.h"
#include "module_plan.h"
#include "opencl_library.h"
#include "signature.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/plugin.h"
#include "spirv_compile.h"

namespace rlx::oneapi {

namespace {

using gpu_host::uses;

class OneApiTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "oneapi"; }
  std::string version() const override { return "0.1.0"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return Verdict::no(fmt::format("oneapi has no native kernel for {}: it runs the MIR decomposition", s.op));
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    const OpDef* def = OpRegistry::instance().find(s.op);
    if (!def || def->level != OpLevel::kMir) return Verdict::no(s.op + " is not a MIR primitive");
    if (uses(s, DType::kC64))
      return Verdict::no(fmt::format(
          "OpenCL C has no complex type, so oneapi has no c64 kernel for {}: split complex values "
          "into real and imaginary parts before compiling",
          s.op));
    // The modules are built for the whole family, and the integrated and Arc GPUs (Xe-LP,
    // Xe-HPG) have no f64: ocloc rejects such a module for them. Refused, never narrowed.
    // Decompositions write scalars as an f64 constant converted to the compute dtype, which
    // constant folding removes before lowering: those two are accepted, and emit() checks that
    // no f64 reached a kernel.
    if (uses(s, DType::kF64) && s.op != "constant" && s.op != "convert")
      return Verdict::no(fmt::format(
          "oneapi targets Intel GPUs without fp64 (Xe-LP, Xe-HPG), so it cannot compute {} in "
          "f64; convert the model to f32 first (rlx never narrows f64 silently)",
          s.op));
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    const LevelZeroProbe& p = probe_level_zero();
    if (!p.driver) return Verdict::no(p.detail + "; `rlx compile --target oneapi` writes OpenCL C and SPIR-V");
    return Verdict::no(p.detail + ", but the oneapi executor (Level Zero command lists) is not "
                       "written yet; `rlx compile --target oneapi` writes OpenCL C and SPIR-V");
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_user_error(fmt::format("oneapi is codegen-only here ({}): use `rlx compile --target oneapi -o DIR` "
                                 "for its OpenCL C and SPIR-V, or run the same kernels with --target gpu",
                                 probe_level_zero().detail));
  }

  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    if (std::string at = gpu_host::dtype_use(program, DType::kF64); !at.empty())
      throw Error(ErrorKind::kCompile,
                  fmt::format("oneapi targets Intel GPUs without fp64, but {} of the compiled program is "
                              "f64; convert the model to f32 first (rlx never narrows f64 silently)",
                              at));
    std::filesystem::create_directories(dir);
    const std::filesystem::path cl = dir / "oneapi_kernels.cl", spv = dir / "oneapi_kernels.spv";
    {
      std::ofstream out(cl);
      out << gpu_host::plan_module(program, opencl_c::opencl_library()).source;
      if (!out.flush()) throw_user_error(fmt::format("oneapi: cannot write {}", cl.string()));
    }
    compile_to_spirv(cl, spv);
    return {Artifact{"oneapi_kernels.cl", "opencl-c"}, Artifact{"oneapi_kernels.spv", "spirv"}};
  }
};

}  // namespace

}  // namespace rlx::oneapi

RLX_DEFINE_TARGET_PLUGIN(rlx::oneapi::OneApiTarget)
