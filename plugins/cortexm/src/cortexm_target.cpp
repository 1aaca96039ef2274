// The cortexm target: int8 quantized graphs as C for Cortex-M4/M7/M55 (docs/targets.md). It takes
// MIR (ProgramLevel::kMir) so the quantized ops reach it whole, claims only the int8 ops it can
// lower, and refuses every float computation by name: a microcontroller build must never carry a
// float layer the user did not see. It cannot run anything on the host (codegen-only); the
// tests prove the generated code under qemu-system-arm.
#include <fmt/format.h>

#include <fstream>

#include "c_emitter.h"
#include "int8_legality.h"
#include "int8_program.h"
#include "rlx/core/error.h"
#include "rlx/core/target_cpu.h"
#include "rlx/sdk/plugin.h"
#include "size_report.h"

namespace rlx::cortexm {

namespace {

constexpr const char* kReportFile = "cortexm_report.json";
constexpr const char* kSummaryFile = "cortexm_sizes.txt";
const int8::TargetWords kWords = {
    "cortexm", "cortexm runs int8 graphs only (Cortex-M firmware without float kernels)",
    "QMatMul and QConv with calibrated activations, Relu, Clip, MaxPool, AveragePool, "
    "residual Add, a final "
    "Softmax",
    "", ""};

class CortexmTarget final : public sdk::TargetPlugin {
 public:
  CortexmTarget() {
    for (const CpuFlags& c : known_cpus()) cpu_names_ += (cpu_names_.empty() ? "" : ",") + c.cpu;
    cpu_ext_.cpus = cpu_names_.c_str();
    cpu_ext_.context = this;
    cpu_ext_.select = [](void* self, const char* cpu) noexcept -> const char* {
      auto* t = static_cast<CortexmTarget*>(self);
      for (const CpuFlags& c : known_cpus())
        if (c.cpu == cpu) {
          t->cpu_ = c.cpu;
          return nullptr;
        }
      return "cortexm generates for cortex-m4, cortex-m7 and cortex-m55";
    };
  }

  const void* extension(const std::string& name, uint32_t version) const override {
    if (name == kTargetCpuExtension && version == kTargetCpuVersion) return &cpu_ext_;
    return nullptr;
  }

  std::string name() const override { return "cortexm"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return int8::claim_native(s, kWords);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return int8::accepts_primitive(s, kWords);
  }

  Verdict can_execute() const override {
    return Verdict::no(
        "cortexm generates C for Cortex-M4/M7/M55 microcontrollers and does not run on this "
        "host; `rlx compile --target cortexm -o DIR` writes the sources, to be built with "
        "arm-none-eabi-gcc into a firmware for the board");
  }

  ProgramLevel program_level() const override { return ProgramLevel::kMir; }

  std::unique_ptr<Executable> compile_mir(const Graph&) override {
    throw_unsupported(
        "cortexm cannot run here: it is codegen-only. `rlx compile --target cortexm -o DIR` "
        "writes the C sources for a Cortex-M firmware");
  }

  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override {
    Int8Program p = int8::lower_int8(g, "cortexm");
    std::vector<Artifact> files = write_sources(p, dir, cpu_);
    SizeReport sizes = measure_sizes(dir, p.arena_bytes, cpu_);
    std::ofstream f(dir / kReportFile, std::ios::binary);
    f << size_report_json(sizes);
    if (!f) throw_user_error(fmt::format("cortexm: cannot write {}", (dir / kReportFile).string()));
    files.push_back({kReportFile, "size-report"});
    std::ofstream t(dir / kSummaryFile, std::ios::binary);
    t << size_report_text(sizes);
    if (!t)
      throw_user_error(fmt::format("cortexm: cannot write {}", (dir / kSummaryFile).string()));
    files.push_back({kSummaryFile, "summary"});
    return files;
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_internal_error("cortexm takes MIR (program_level); compile(LIR) must not be called");
  }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_internal_error("cortexm takes MIR (program_level); emit(LIR) must not be called");
  }

 private:
  std::string cpu_;  // --cpu; empty: the build fragments default to cortex-m4, sizes for all
  std::string cpu_names_;
  TargetCpuV1 cpu_ext_;
};

}  // namespace

}  // namespace rlx::cortexm

RLX_DEFINE_TARGET_PLUGIN(rlx::cortexm::CortexmTarget)
