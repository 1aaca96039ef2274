// A target whose constructor throws: the factory must catch it and report "boom".
#include <stdexcept>

#include "rlx/sdk/plugin.h"

namespace {

class ThrowingTarget final : public rlx::sdk::TargetPlugin {
 public:
  ThrowingTarget() { throw std::runtime_error("boom"); }
  std::string name() const override { return "abi_throws"; }
  rlx::Verdict claim_native(const rlx::NodeSignature&) const override { return {}; }
  rlx::Verdict accepts_primitive(const rlx::NodeSignature&) const override { return {}; }
  rlx::Verdict can_execute() const override { return {}; }
  std::unique_ptr<rlx::Executable> compile(const rlx::lir::Program&) override { return nullptr; }
  std::vector<rlx::Artifact> emit(const rlx::lir::Program&, const std::filesystem::path&) override {
    return {};
  }
};

}  // namespace

RLX_DEFINE_TARGET_PLUGIN(ThrowingTarget)
