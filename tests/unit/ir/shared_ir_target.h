// A target that claims nothing natively and accepts every primitive, so lowering runs every HIR op
// through its decomposition and the LIR tests see core's own fusion and kernels alone.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/dispatch.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/lir.h"
#include "rlx/core/passes.h"

namespace rlx::ir_test {

class SharedIrOnly : public Target {
 public:
  std::string name() const override { return "shared-ir-only"; }
  Verdict claim_native(const NodeSignature&) const override { return Verdict::no("none"); }
  Verdict accepts_primitive(const NodeSignature&) const override { return Verdict::yes(); }
  Verdict can_execute() const override { return Verdict::no("none"); }
  std::unique_ptr<Executable> compile(const lir::Program&) override { return nullptr; }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    return {};
  }
};

// Graph text -> LIR through dispatch to SharedIrOnly and the default passes.
inline lir::Program lower(const char* text, const LoweringOptions& options = {}) {
  SharedIrOnly target;
  Graph g = dispatch(parse_graph(text), target).graph;
  run_default_passes(g);
  return lower_to_lir(g, options);
}

}  // namespace rlx::ir_test
