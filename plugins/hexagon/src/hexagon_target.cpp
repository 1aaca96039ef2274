// hexagon: the Hexagon DSP (v67 with 128-byte HVX) as a target that writes C. The LIR's loop
// kernels go through the SDK's C renderer with a freestanding dialect (hexagon_dialect.h),
// dot_general through HVX dot products where they pay (8/16-bit integers, hvx_dot.h) and the
// shared loop kernel elsewhere; a generated driver and a small runtime make it a whole program
// that clang's Hexagon backend builds (hexagon_program.h, hexagon_toolchain.h).
//
// Without FastRPC and a DSP the target is codegen-only. With RLX_HEXAGON_EMULATOR naming
// qemu-hexagon it executes its programs under the emulator (Linux user mode), which is how the
// shared target suite checks the generated code against the cpu: it proves the C, the HVX and the
// runtime compute the right values on the Hexagon instruction set, not the DSP's timing, its
// memory limits or a FastRPC session.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "hexagon_executable.h"
#include "hexagon_program.h"
#include "hexagon_toolchain.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/host_device.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"

namespace rlx::hexagon {

namespace {

constexpr const char* kNoF64 =
    "the Hexagon runtime's math is f32 only (v67 HVX has no float lanes)";

// What the renderer writes as loops (elementwise, index maps, reductions, pad, concat), plus
// dot_general, the one library call the target writes.
bool has_kernel_for(const std::string& op) {
  if (op == "dot_general") return true;
  const OpDef* def = OpRegistry::instance().find(op);
  if (!def || def->level != OpLevel::kMir) return false;
  return def->cls != OpClass::kOpaque || op == "pad" || op == "concat";
}

class HexagonTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "hexagon"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return Verdict::no("hexagon has no native kernel for " + s.op +
                       ": it runs the MIR decomposition");
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = sdk::primitive_only(s); !v.ok) return v;
    if (!has_kernel_for(s.op))
      return Verdict::no("hexagon writes loop kernels and dot_general only, and " + s.op +
                         " is a library call it has no kernel for (use --target cpu)");
    if (Verdict v = sdk::refuse_complex(s, "C", name()); !v.ok) return v;
    // Decompositions write scalars as f64 constants that folding removes: those pass here and
    // the lowered program is checked (check_no_f64).
    if (sdk::uses(s, DType::kF64) && s.op != "constant" && s.op != "convert")
      return sdk::refuse_f64(kNoF64, name(), s.op);
    return Verdict::yes();
  }

  Verdict can_execute() const override {
    std::string why;
    const std::string emulator = hexagon_emulator(&why);
    if (emulator.empty())
      return Verdict::no(
          why +
          "; `rlx compile --target hexagon -o DIR` writes the C program (and its ELF "
          "where clang has the Hexagon backend); RLX_HEXAGON_EMULATOR=qemu-hexagon runs "
          "programs under the emulator for testing");
    if (hexagon_clang(&why).empty()) return Verdict::no(why);
    // Test mode: say what a run here proves, beside the status.
    return Verdict{true, "test mode: programs run under " + emulator +
                             " (Linux user mode), which checks their values on the Hexagon "
                             "instruction set, not DSP timing, memory or a FastRPC session"};
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    if (Verdict ok = can_execute(); !ok.ok)
      throw_unsupported("hexagon cannot run programs here: " + ok.reason);
    sdk::check_no_f64(program, kNoF64);
    return std::make_unique<HexagonExecutable>(program, hexagon_clang(nullptr),
                                               hexagon_emulator(nullptr));
  }

  std::shared_ptr<Device> device() override { return device_; }

  // The two sources, the runtime, build.sh and, where clang has the backend, the ELF.
  std::vector<Artifact> emit(const lir::Program& program,
                             const std::filesystem::path& dir) override {
    sdk::check_no_f64(program, kNoF64);
    std::vector<Artifact> artifacts;
    for (const std::string& file : write_program(render_hexagon_program(program), dir))
      artifacts.push_back({file, file.ends_with(".h") ? "c-header" : "c-source"});
    std::string why;
    const std::string clang = hexagon_clang(&why);
    {
      std::ofstream script(dir / "build.sh");
      script << "#!/bin/sh\n# Builds " << kElfFile
             << " (run it under qemu-hexagon, or on a Hexagon v67+ "
             << "Linux userland) in this folder.\nset -e\ncd \"$(dirname \"$0\")\"\n"
             << build_command(clang.empty() ? "clang" : clang) << "\n";
      if (!script.flush())
        throw Error(ErrorKind::kUser, "hexagon: cannot write " + (dir / "build.sh").string());
    }
    std::filesystem::permissions(dir / "build.sh", std::filesystem::perms::owner_exec,
                                 std::filesystem::perm_options::add);
    artifacts.push_back({"build.sh", "build-script"});
    if (!clang.empty()) {
      build_program(clang, dir);
      std::filesystem::remove(dir / "clang.log");
      artifacts.push_back({kElfFile, "hexagon-elf"});
    }
    return artifacts;
  }

 private:
  std::shared_ptr<Device> device_ = std::make_shared<sdk::HostDevice>();
};

}  // namespace

}  // namespace rlx::hexagon

RLX_DEFINE_TARGET_PLUGIN(rlx::hexagon::HexagonTarget)
