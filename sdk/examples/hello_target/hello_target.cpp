// hello: the smallest executing rlx target, written for plugin authors to copy
// (docs/plugin-authors.md, "Starting from the skeleton").
//
// A target answers five questions for the dispatch contract and the registry
// (docs/architecture.md sections 3 and 4): which HIR ops it lowers natively (none here), which
// MIR primitives its code generator accepts, whether it can run on this machine, how to turn an
// LIR program into something that runs, and how to write that program out as artifacts. hello's
// "device" is host memory (the SDK's HostDevice): it renders the LIR's loop kernels as C with the
// SDK's renderer, compiles them with the system C compiler and calls them. Library calls
// (dot_general, gather, scatter, while, ...) are what a real target writes by hand; hello refuses
// them, with the reason, so the dispatch contract can report which node needs them.
//
// Methods may throw rlx::Error; RLX_DEFINE_TARGET_PLUGIN catches everything at the plugin
// boundary and hands the host a Status carrying the error's kind.
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "c_library.h"
#include "hello_executable.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/host_device.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"
#include "rlx/sdk/render.h"

namespace {

// What becomes a loop kernel in the LIR (elementwise ops, index maps, reductions, pad and concat
// fuse or lower into loop nests); everything else is a library call.
bool lowers_to_loops(const std::string& op) {
  const rlx::OpDef* def = rlx::OpRegistry::instance().find(op);
  if (!def || def->level != rlx::OpLevel::kMir) return false;
  // bitcast is a view of a buffer (an alias in LIR, no kernel): how c64 and i64 values reach
  // the loop kernels as 32-bit pairs.
  return def->cls != rlx::OpClass::kOpaque || op == "pad" || op == "concat" || op == "bitcast";
}

class HelloTarget final : public rlx::sdk::TargetPlugin {
 public:
  // Must equal `name` in the manifest (hello.toml, written by rlx_add_plugin).
  std::string name() const override { return "hello"; }

  // Path 1: hello has no hand-written kernels, so every HIR op takes the shared MIR path.
  rlx::Verdict claim_native(const rlx::NodeSignature&) const override {
    return rlx::Verdict::no("hello lowers no op natively");
  }

  // Path 2: the C renderer writes every loop kernel at every dtype but complex. The reason of a
  // refusal reaches the user in `rlx explain` and in the error naming the node.
  rlx::Verdict accepts_primitive(const rlx::NodeSignature& sig) const override {
    if (!lowers_to_loops(sig.op))
      return rlx::Verdict::no("hello runs loop kernels only and " + sig.op +
                              " is a library call (write its kernel, as the cpu target does, to accept it)");
    // The SDK words the refusals targets share (sdk/legality.h), so users read one sentence.
    return rlx::sdk::refuse_complex(sig, "C", name());
  }

  // The registry lists a target that refuses here as codegen-only, with this reason.
  rlx::Verdict can_execute() const override {
    if (!find_c_compiler_once())
      return rlx::Verdict::no("hello compiles its kernels with a C compiler and found none ($CC, cc, gcc, clang)");
    return rlx::Verdict::yes();
  }

  std::unique_ptr<rlx::Executable> compile(const rlx::lir::Program& program) override {
    rlx::Verdict ok = can_execute();
    if (!ok.ok) throw rlx::Error(rlx::ErrorKind::kDevice, ok.reason);
    return std::make_unique<hello::HelloExecutable>(program, *find_c_compiler_once());
  }

  // Buffers of a host target are host memory; the runtime hands their addresses to run().
  std::shared_ptr<rlx::Device> device() override { return device_; }

  // Writes every loop kernel as one C function `void <kernel>(char* const* buffers)`; library
  // calls appear as comments naming the callee.
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

 private:
  static const std::optional<std::string>& find_c_compiler_once() {
    static const std::optional<std::string> compiler = hello::find_c_compiler();
    return compiler;
  }

  std::shared_ptr<rlx::Device> device_ = std::make_shared<rlx::sdk::HostDevice>();
};

}  // namespace

// Exports rlx_plugin_abi() (checked before anything else) and the factory the registry calls.
RLX_DEFINE_TARGET_PLUGIN(HelloTarget)
