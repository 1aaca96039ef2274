// The tpu target: MIR graphs as StableHLO, compiled and run by XLA through any PJRT plugin
// (libtpu on a TPU host; XLA's CPU plugin in CI; JAX's CUDA plugin on a GPU). It takes the whole
// MIR graph (ProgramLevel::kMir): XLA does the fusion, so there is no LIR and no native HIR op;
// every HIR op takes its MIR decomposition.
#include <fmt/format.h>

#include <fstream>
#include <mutex>

#include "pjrt_client.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"
#include "stablehlo_emitter.h"
#include "tpu_executable.h"
#include "weight_cache.h"

namespace rlx::tpu {

namespace {

constexpr const char* kModuleFile = "model.mlir";

class TpuTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "tpu"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return Verdict::no(fmt::format(
        "the tpu target hands XLA the MIR decomposition of {}, which XLA fuses itself", s.op));
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    Verdict v = can_emit(s);
    if (!v.ok) return v;
    // TPUs have no f64; XLA's CPU and GPU plugins do.
    std::shared_ptr<PjrtClient> c = opened();
    auto f64 = [](const TensorType& t) { return t.dtype == DType::kF64; };
    if (c && c->platform() == "tpu" &&
        (std::any_of(s.inputs.begin(), s.inputs.end(), f64) ||
         std::any_of(s.outputs.begin(), s.outputs.end(), f64)))
      return Verdict::no(fmt::format(
          "TPUs have no f64, so tpu cannot compute {} in f64; convert the model to f32 first (rlx "
          "never narrows f64 silently)",
          s.op));
    return Verdict::yes();
  }

  // Available when a PJRT plugin loads and reports a device: the detail names it.
  Verdict can_execute() const override {
    std::string why;
    std::shared_ptr<PjrtClient> c = client(&why);
    if (!c) return Verdict::no(why);
    std::string stablehlo = c->stablehlo_versions();
    return Verdict{
        true,
        fmt::format("PJRT platform {} ({} device{}), PJRT C API {}{}, plugin {}", c->platform(),
                    c->device_count(), c->device_count() == 1 ? "" : "s", c->api_version(),
                    stablehlo.empty() ? "" : ", StableHLO " + stablehlo, c->plugin_path())};
  }

  ProgramLevel program_level() const override { return ProgramLevel::kMir; }

  std::unique_ptr<Executable> compile_mir(const Graph& g) override {
    std::string why;
    std::shared_ptr<PjrtClient> c = client(&why);
    if (!c)
      throw_unsupported(fmt::format(
          "tpu cannot run here: {}. `rlx compile --target tpu -o DIR` still writes the StableHLO",
          why));
    return std::make_unique<TpuExecutable>(std::move(c), weights_, g);
  }

  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override {
    EmittedModule m = emit_stablehlo(g);
    std::ofstream f(dir / kModuleFile, std::ios::binary);
    f << m.text;
    if (!f) throw_user_error(fmt::format("tpu: cannot write {}", (dir / kModuleFile).string()));
    return {{kModuleFile, "stablehlo"}};
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_internal_error("tpu takes MIR (program_level); compile(LIR) must not be called");
  }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_internal_error("tpu takes MIR (program_level); emit(LIR) must not be called");
  }

 private:
  // The shared client, opened on first use and kept for the target's life.
  std::shared_ptr<PjrtClient> client(std::string* why) const {
    std::lock_guard lock(mutex_);
    if (!client_) client_ = PjrtClient::shared(why);
    return client_;
  }
  std::shared_ptr<PjrtClient> opened() const {
    std::lock_guard lock(mutex_);
    return client_;
  }

  mutable std::mutex mutex_;
  mutable std::shared_ptr<PjrtClient> client_;
  WeightCache weights_;
};

}  // namespace

}  // namespace rlx::tpu

RLX_DEFINE_TARGET_PLUGIN(rlx::tpu::TpuTarget)
