// The ane target: Apple's Neural Engine through CoreML. It takes the whole MIR graph
// (ProgramLevel::kMir) and writes an ML Program package (.mlpackage: the MIL program, its
// weights, a manifest). CoreML runs only on Apple platforms, so here the target is
// codegen-only: `rlx compile --target ane -o DIR` writes the package and io.json. The class is
// in a header so tests can give it a PackageRunner (plugins/ane/tests: coremltools evaluates
// the MIL program on this machine).
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "mil_lowering.h"
#include "ml_package.h"
#include "rlx/core/target_cpu.h"
#include "rlx/sdk/plugin.h"

namespace rlx::ane {

inline constexpr const char* kNoCoreMl =
    "CoreML runs only on Apple platforms (macOS, iOS); `rlx compile --target ane -o DIR` writes "
    "the .mlpackage";

// Runs a written package: its inputs as the package holds them (io.json's layout), in the
// graph's input order; returns its outputs in order, then the index checks' int32 scalars.
class PackageRunner {
 public:
  virtual ~PackageRunner() = default;
  virtual std::vector<Tensor> run(const std::filesystem::path& dir, const MilProgram& program,
                                  const std::vector<Tensor>& inputs) = 0;
};

class AneTarget : public sdk::TargetPlugin {
 public:
  AneTarget();
  std::string name() const override { return "ane"; }
  Verdict claim_native(const NodeSignature& s) const override;
  Verdict accepts_primitive(const NodeSignature& s) const override { return can_lower(s); }
  Verdict can_execute() const override;
  ProgramLevel program_level() const override { return ProgramLevel::kMir; }
  std::unique_ptr<Executable> compile_mir(const Graph& g) override;
  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override;
  std::unique_ptr<Executable> compile(const lir::Program&) override;
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override;
  // --deployment-target and --compute-units arrive as rlx.target_cpu selections.
  const void* extension(const std::string& name, uint32_t version) const override;

  const PackageOptions& options() const { return options_; }
  // A deployment target (ios17, macos14, ...) or a compute-unit preference (CPU_AND_NE, ...);
  // nullptr on success, else why not.
  const char* select(const std::string& choice);

 protected:
  // What runs a package here; none by default.
  virtual std::shared_ptr<PackageRunner> open_runner() { return nullptr; }

 private:
  PackageOptions options_;
  TargetCpuV1 choices_;
  std::string choice_error_;
};

}  // namespace rlx::ane
