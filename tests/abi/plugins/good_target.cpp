// A minimal well-formed target: refuses every op, cannot execute ("no device"), and fails inside
// compile() so the test can see the exception come back across the boundary as kPlugin.
#include <stdexcept>

#include "rlx/sdk/plugin.h"

#ifndef RLX_TEST_PLUGIN_NAME
#define RLX_TEST_PLUGIN_NAME "abi_good"
#endif

namespace {

class GoodTarget final : public rlx::sdk::TargetPlugin {
 public:
  std::string name() const override { return RLX_TEST_PLUGIN_NAME; }
  rlx::Verdict claim_native(const rlx::NodeSignature&) const override {
    return rlx::Verdict::no("refuses everything");
  }
  rlx::Verdict accepts_primitive(const rlx::NodeSignature&) const override {
    return rlx::Verdict::no("refuses everything");
  }
  rlx::Verdict can_execute() const override { return rlx::Verdict::no("no device"); }
  std::unique_ptr<rlx::Executable> compile(const rlx::lir::Program&) override {
    throw std::runtime_error("codegen exploded");
  }
  std::vector<rlx::Artifact> emit(const rlx::lir::Program&, const std::filesystem::path&) override {
    return {{"kernel.txt", "text"}};
  }
};

}  // namespace

RLX_DEFINE_TARGET_PLUGIN(GoodTarget)
