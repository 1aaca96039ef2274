// The mlx target: MIR graphs as MLX arrays, compiled and run by Apple's MLX library (the cpu
// device on Linux through PyPI's mlx-cpu; the gpu through Metal on macOS). It takes the whole
// graph (ProgramLevel::kMir); LayerNorm, RMSNorm and Attention are claimed natively as
// mlx::core::fast kernels, every other HIR op takes its MIR decomposition, which MLX's compile
// fuses.
#include <fmt/format.h>
#include <mlx/device.h>
#include <mlx/version.h>

#include "graph_builder.h"
#include "mlx_executable.h"
#include "native_ops.h"
#include "program_writer.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "weight_cache.h"

namespace rlx::mlx_target {

namespace {

namespace mx = mlx::core;

bool on_gpu() {
  return mx::default_device() == mx::Device::gpu;
}

// MLX's GPU (Metal) has no f64.
Verdict refuse_f64_on_gpu(const NodeSignature& s) {
  auto f64 = [](const TensorType& t) { return t.dtype == DType::kF64; };
  if (on_gpu() && (std::any_of(s.inputs.begin(), s.inputs.end(), f64) ||
                   std::any_of(s.outputs.begin(), s.outputs.end(), f64)))
    return Verdict::no(fmt::format(
        "MLX's gpu has no f64, so mlx cannot compute {} in f64; convert the model to f32 first "
        "(rlx never narrows f64 silently)",
        s.op));
  return Verdict::yes();
}

class MlxTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "mlx"; }

  Verdict claim_native(const NodeSignature& s) const override {
    Verdict v = claim(s);
    if (!v.ok) return v;
    Verdict f = refuse_f64_on_gpu(s);
    return f.ok ? v : f;
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    Verdict v = can_build(s);
    return v.ok ? refuse_f64_on_gpu(s) : v;
  }

  Verdict can_execute() const override {
    return Verdict{true, fmt::format("MLX {} on its {} device", mx::version(),
                                     on_gpu() ? "gpu (Metal)" : "cpu")};
  }

  ProgramLevel program_level() const override { return ProgramLevel::kMir; }

  std::unique_ptr<Executable> compile_mir(const Graph& g) override {
    return std::make_unique<MlxExecutable>(weights_, g);
  }

  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override {
    return write_program(g, dir);
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_internal_error("mlx takes MIR (program_level); compile(LIR) must not be called");
  }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_internal_error("mlx takes MIR (program_level); emit(LIR) must not be called");
  }

 private:
  WeightCache weights_;
};

}  // namespace

}  // namespace rlx::mlx_target

RLX_DEFINE_TARGET_PLUGIN(rlx::mlx_target::MlxTarget)
