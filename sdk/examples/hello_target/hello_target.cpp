// hello: the smallest useful rlx target plugin, written for plugin authors to copy.
//
// A target answers four questions for the dispatch contract and the registry (docs/architecture.md
// sections 3 and 4): which HIR ops it lowers natively (none here), which MIR primitives its code
// generator accepts (all, at f32), whether it can run on this machine (no: it is codegen-only),
// and how to turn an LIR program into artifacts (C source from the SDK's renderer). Methods may
// throw rlx::Error; RLX_DEFINE_TARGET_PLUGIN catches everything at the plugin boundary.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "rlx/sdk/render.h"

namespace {

class HelloTarget final : public rlx::sdk::TargetPlugin {
 public:
  // Must equal `name` in the manifest (hello.toml, written by rlx_add_plugin).
  std::string name() const override { return "hello"; }

  // Path 1: hello has no hand-written kernels, so every HIR op takes the shared MIR path.
  rlx::Verdict claim_native(const rlx::NodeSignature&) const override {
    return rlx::Verdict::no("hello lowers no op natively");
  }

  // Path 2: the C renderer handles every primitive; this example restricts itself to f32 to
  // show how a refusal is worded. The reason reaches the user in `rlx explain` and in errors.
  rlx::Verdict accepts_primitive(const rlx::NodeSignature& sig) const override {
    for (const auto* types : {&sig.inputs, &sig.outputs})
      for (const rlx::TensorType& t : *types)
        if (t.dtype != rlx::DType::kF32)
          return rlx::Verdict::no("hello generates f32 code only, " + sig.op + " uses " +
                                  std::string(rlx::dtype_name(t.dtype)));
    return rlx::Verdict::yes();
  }

  // The registry lists a target that refuses here as codegen-only, with this reason.
  rlx::Verdict can_execute() const override {
    return rlx::Verdict::no("hello is a codegen-only example target");
  }

  std::unique_ptr<rlx::Executable> compile(const rlx::lir::Program&) override {
    throw rlx::Error(rlx::ErrorKind::kUnsupported,
                     "hello is codegen-only: use `rlx compile --target hello -o DIR` to write its "
                     "C source, or run on an executing target such as cpu");
  }

  // Writes every loop kernel as one C function `void <kernel>(char* const* buffers)`; library
  // calls (dot_general, gather, ...) appear as comments naming the callee.
  std::vector<rlx::Artifact> emit(const rlx::lir::Program& program,
                                  const std::filesystem::path& dir) override {
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = dir / "hello_kernels.c";
    std::ofstream out(file);
    out << rlx::sdk::render_program(program, rlx::sdk::c_dialect());
    if (!out.flush())
      throw rlx::Error(rlx::ErrorKind::kUser, "hello: cannot write " + file.string());
    return {{"hello_kernels.c", "c-source"}};
  }
};

}  // namespace

// Exports rlx_plugin_abi() (checked before anything else) and the factory the registry calls.
RLX_DEFINE_TARGET_PLUGIN(HelloTarget)
