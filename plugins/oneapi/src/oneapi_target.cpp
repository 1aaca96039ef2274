// The oneapi target: Intel GPUs through Level Zero. Kernels are the gpu target's OpenCL C (the
// same module text, from the shared OpenCL C kernel library), compiled to SPIR-V for
// zeModuleCreate. There is no Level Zero executor yet, so the target is codegen-only everywhere;
// its status says whether a Level Zero GPU was found. Where none is, its SPIR-V is validated
// (spirv-val, ocloc) and its OpenCL C runs on the gpu target (plugins/oneapi/tests).
#include <fmt/format.h>

#include "level_zero_probe.h"
#include "module_plan.h"
#include "opencl_library.h"
#include "signature.h"
#include "rlx/core/error.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"
#include "spirv_compile.h"
#include "target_plugin.h"

namespace rlx::oneapi {

namespace {

using gpu_host::uses;

class OneApiTarget final : public gpu_host::GpuLikeTargetPlugin {
 public:
  OneApiTarget() : GpuLikeTargetPlugin("oneapi", "OpenCL C") {}

  const sdk::Dialect* kernel_dialect() const override { return &sdk::opencl_dialect(); }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = common_refusals(s); !v.ok) return v;
    // The modules are built for the whole family, and the integrated and Arc GPUs (Xe-LP,
    // Xe-HPG) have no f64: ocloc rejects such a module for them. Refused, never narrowed.
    // Decompositions write scalars as an f64 constant converted to the compute dtype, which
    // constant folding removes before lowering: those two are accepted, and emit() checks that
    // no f64 reached a kernel.
    if (uses(s, DType::kF64) && s.op != "constant" && s.op != "convert")
      return sdk::refuse_f64("oneapi targets Intel GPUs without fp64 (Xe-LP, Xe-HPG)", "it", s.op);
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    const LevelZeroProbe& p = probe_level_zero();
    if (!p.driver) return Verdict::no(p.detail + "; `rlx compile --target oneapi` writes OpenCL C and SPIR-V");
    return Verdict::no(p.detail + ", but the oneapi executor (Level Zero command lists) is not "
                       "written yet; `rlx compile --target oneapi` writes OpenCL C and SPIR-V");
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_unsupported(fmt::format("oneapi is codegen-only here ({}): use `rlx compile --target oneapi -o DIR` "
                                 "for its OpenCL C and SPIR-V, or run the same kernels with --target gpu",
                                 probe_level_zero().detail));
  }

  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    sdk::check_no_f64(program, "oneapi targets Intel GPUs without fp64");
    Artifact cl = write_module(dir, "oneapi_kernels.cl", "opencl-c",
                               gpu_host::plan_module(program, opencl_c::opencl_library()).source);
    compile_to_spirv(dir / cl.path, dir / "oneapi_kernels.spv");
    return {cl, Artifact{"oneapi_kernels.spv", "spirv"}};
  }
};

}  // namespace

}  // namespace rlx::oneapi

RLX_DEFINE_TARGET_PLUGIN(rlx::oneapi::OneApiTarget)
