// The fpga target: int8 quantized graphs as a synthesizable SystemVerilog datapath
// (docs/targets.md). Like cortexm it takes MIR (ProgramLevel::kMir), so the quantized ops reach
// it whole and become the SDK's Int8Program (sdk/int8); it refuses every float computation by
// name, since a datapath of int8 MACs has no float units to put it on. It runs nothing on the
// host (codegen-only); the tests simulate the design with Verilator.
#include <fmt/format.h>

#include "design.h"
#include "int8_legality.h"
#include "rlx/core/error.h"
#include "rlx/sdk/plugin.h"

namespace rlx::fpga {

namespace {

const int8::TargetWords kWords = {
    "fpga", "fpga generates int8 datapaths only (MAC arrays without float units)",
    "QMatMul with calibrated activations, Relu, Clip",
    "fpga does not generate Softmax yet: end the graph at the last quantized dense layer, whose "
    "int32 accumulators are the design's output (real = acc * scale, the scales in "
    "fpga_design.json), and take the softmax on the host",
    "fpga generates dense layers only so far (no convolution, pooling or residual datapath); "
    "cortexm lowers int8 convolution networks"};

class FpgaTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "fpga"; }

  Verdict claim_native(const NodeSignature& s) const override {
    return int8::claim_native(s, kWords);
  }
  Verdict accepts_primitive(const NodeSignature& s) const override {
    return int8::accepts_primitive(s, kWords);
  }

  Verdict can_execute() const override {
    return Verdict::no(
        "fpga generates SystemVerilog and does not run on this host; `rlx compile --target "
        "fpga -o DIR` writes the design, to be synthesized for an FPGA board (yosys and "
        "nextpnr, or the vendor's tools) or simulated with Verilator");
  }

  ProgramLevel program_level() const override { return ProgramLevel::kMir; }

  std::unique_ptr<Executable> compile_mir(const Graph&) override {
    throw_unsupported(
        "fpga cannot run here: it is codegen-only. `rlx compile --target fpga -o DIR` writes "
        "the SystemVerilog design, to be synthesized or simulated with Verilator");
  }

  std::vector<Artifact> emit_mir(const Graph& g, const std::filesystem::path& dir) override {
    const int32_t p = parallelism_from_environment();
    Int8Program prog = int8::lower_int8(g, "fpga");
    if (prog.softmax)  // claim_native refuses it; a graph that reaches here anyway is refused
      throw_unsupported(
          "fpga: the graph ends in a Softmax, which the target does not generate yet; end it "
          "at the last quantized dense layer (int32 accumulators) and take the softmax on the "
          "host");
    for (const int8::Layer& l : prog.layers)  // claim_native refuses them first
      if (l.kind != int8::LayerKind::kDense || l.residual)
        throw_unsupported(fmt::format(
            "fpga: {} is a {} layer{}; the target generates plain dense layers only so far",
            l.name, int8::layer_kind_name(l.kind), l.residual ? " with a residual add" : ""));
    return write_design(prog, p, dir);
  }

  std::unique_ptr<Executable> compile(const lir::Program&) override {
    throw_internal_error("fpga takes MIR (program_level); compile(LIR) must not be called");
  }
  std::vector<Artifact> emit(const lir::Program&, const std::filesystem::path&) override {
    throw_internal_error("fpga takes MIR (program_level); emit(LIR) must not be called");
  }

};

}  // namespace

}  // namespace rlx::fpga

RLX_DEFINE_TARGET_PLUGIN(rlx::fpga::FpgaTarget)
