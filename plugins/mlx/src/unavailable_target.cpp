// The mlx target as built without MLX: it loads anywhere and says what is missing, so
// `rlx --list-targets` shows mlx as unavailable with the fix instead of leaving it out.
#include <string>

#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"

namespace rlx::mlx_target {

namespace {

constexpr const char* kWhy =
    "this rlx was built without Apple's MLX library: pip install mlx-cpu (Linux) or mlx (macOS) "
    "into the Python the build uses, or configure with -DRLX_MLX_DIR=<MLX prefix>, and rebuild";

class UnavailableMlxTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "mlx"; }
  Verdict claim_native(const NodeSignature&) const override { return Verdict::no(kWhy); }
  Verdict accepts_primitive(const NodeSignature&) const override { return Verdict::no(kWhy); }
  Verdict can_execute() const override { return Verdict::no(kWhy); }
  ProgramLevel program_level() const override { return ProgramLevel::kMir; }
  std::unique_ptr<Executable> compile_mir(const Graph&) override { throw_unsupported(kWhy); }
  std::vector<Artifact> emit_mir(const Graph&, const std::filesystem::path&) override {
    throw_unsupported(kWhy);
  }
  std::unique_ptr<Executable> compile(const lir::Program&) override { throw_unsupported(kWhy); }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_unsupported(kWhy);
  }
};

}  // namespace

}  // namespace rlx::mlx_target

RLX_DEFINE_TARGET_PLUGIN(rlx::mlx_target::UnavailableMlxTarget)
