// The cpu target: every MIR primitive through loop kernels and library calls, MatMul and
// Linear claimed natively by its GEMM, parallel with oneTBB.
#include <fmt/format.h>

#include <fstream>

#include "codegen_emit.h"
#include "collective_call.h"
#include "cpu_executable.h"
#include "dequant_matmul.h"
#include "gemm.h"
#include "gemm_bf16.h"
#include "gloo_comm.h"
#include "int8_gemm.h"
#include "linalg_kernels.h"
#include "nn_kernels.h"
#include "prebuilt_kernels.h"
#include "qconv.h"
#include "qmatmul.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"
#include "rlx/sdk/host_device.h"
#include "rlx/sdk/legality.h"
#include "rlx/sdk/plugin.h"
#include "rlx/sdk/render.h"
#include "splat_kernels.h"

namespace rlx::cpu {

namespace {

// Ops whose result elements are copies of input elements (or of a constant).
bool moves_elements(const OpDef& def) {
  static const char* const kMovers[] = {"select", "concat", "pad", "gather"};
  if (def.cls == OpClass::kIndexMap || def.cls == OpClass::kConstant) return true;
  return std::any_of(std::begin(kMovers), std::end(kMovers),
                     [&](const char* m) { return def.name == m; });
}

class CpuTarget final : public sdk::TargetPlugin {
 public:
  std::string name() const override { return "cpu"; }

  Verdict claim_native(const NodeSignature& s) const override {
    if (s.op == "MatMul" && sdk::only_uses(s, {DType::kC64}))
      return Verdict{true, "c64 through OpenBLAS cgemm"};
    if (s.op == "MatMul" || s.op == "Linear") {
      if (sdk::only_uses(s, {DType::kF32, DType::kF64})) return Verdict::yes();
      // A 16-bit Linear (what --precision amp-bf16 and amp-f16 narrow) computes as its
      // decomposition does, a product rounded to the type and a bias add rounded again, with the
      // bias added as the product is stored: no pass of its own, and the result stays in the
      // product's layout, so a head split after it folds into Attention as at f32.
      if (s.op == "Linear" &&
          (sdk::only_uses(s, {DType::kBF16}) || sdk::only_uses(s, {DType::kF16}))) {
        const bool bf16 = sdk::only_uses(s, {DType::kBF16});
        return Verdict{true, bf16 && bf16_unit() != Bf16Unit::kNone
                                 ? fmt::format("bf16 Linear on {}, f32 sums, where x's rows are "
                                               "contiguous and K is a multiple of 32, else "
                                               "widened to f32; the bias added to the product "
                                               "rounded to bf16",
                                               bf16_unit_name(bf16_unit()))
                                 : fmt::format("{} Linear widened to f32 for the f32 GEMM; the "
                                               "bias added to the product rounded to {}",
                                               bf16 ? "bf16" : "f16", bf16 ? "bf16" : "f16")};
      }
      return Verdict::no(fmt::format("cpu's GEMM takes {} in f32 or f64{}", s.op,
                                     s.op == "MatMul" ? " (and c64 through cgemm)" : " only"));
    }
    if (s.op == "DequantMatMul" || s.op == "DequantizeRows") return claim_block_op(s);
    if (s.op == "QMatMul") return claim_qmatmul(s);
    if (s.op == "QConv") return claim_qconv(s);
    if (auto v = claim_nn_op(s)) return *v;  // Attention, LayerNorm, RMSNorm, Softmax
    if (auto v = claim_splat_op(s)) return *v;    // Gaussian splatting, forward and backward
    if (auto v = claim_linalg_op(s)) return *v;   // LAPACK, CSR and KLU (linalg_kernels.h)
    if (auto v = claim_collective(s)) return *v;  // AllReduce, Send, ... through Gloo
    return Verdict::no(fmt::format("cpu has no native kernel for {}", s.op));
  }

  Verdict accepts_primitive(const NodeSignature& s) const override {
    if (Verdict v = sdk::primitive_only(s); !v.ok) return v;
    const OpDef* def = OpRegistry::instance().find(s.op);
    // c64: a bitcast is a view of the f32 pairs and dot_general a call of OpenBLAS's cgemm;
    // every other c64 op is split into its real parts (the split-complex rewrite).
    if (sdk::uses(s, DType::kC64) && s.op != "bitcast" && s.op != "dot_general")
      return Verdict::no(fmt::format("the cpu code generator has no c64 kernels for {}", s.op));
    // u64 is carried as its 64 bits: ops that only move or pick elements are exact, arithmetic
    // in the int64 compute class would be wrong above INT64_MAX.
    if (sdk::uses(s, DType::kU64) && !moves_elements(*def))
      return Verdict::no(fmt::format(
          "cpu moves u64 values but does not compute on them ({} needs arithmetic); convert the "
          "model's u64 tensors to i64 where the values allow it",
          s.op));
    return Verdict{true, product_note(s)};
  }

  // What runs a bf16 x bf16 dot_general (an accepted primitive's note, shown by `rlx explain`
  // on the node it came from): the bf16 GEMM on AMX tiles or AVX512-BF16 where this CPU has them,
  // chosen per call by the operands' layout (gemm_call.cpp), else the f32 GEMM on widened
  // operands.
  static std::string product_note(const NodeSignature& s) {
    if (s.op != "dot_general" || s.inputs.size() != 2 || s.inputs[0].dtype != DType::kBF16)
      return {};
    if (bf16_unit() == Bf16Unit::kNone) return "bf16 x bf16 widened to f32 for the f32 GEMM";
    const auto it = s.attrs.find("lhs_contract");
    int64_t k = 1;
    bool known = it != s.attrs.end();
    if (known)
      for (int64_t d : std::get<IntList>(it->second)) {
        const Dim& dim = s.inputs[0].shape.at(static_cast<size_t>(d));
        known = known && dim.is_static();
        if (dim.is_static()) k *= dim.value;
      }
    if (known && k % 32 != 0)
      return fmt::format(
          "bf16 x bf16 widened to f32 (K = {} is not a multiple of 32, the bf16 GEMM's depth)", k);
    return fmt::format(
        "bf16 x bf16 on {}, f32 sums, where A's rows are contiguous, else widened "
        "to f32",
        bf16_unit_name(bf16_unit()));
  }

  // Always runs here; the reason says how loop kernels run (compiled or interpreted).
  Verdict can_execute() const override {
    // How kernels run, then what the products run on, so a listing says whether this CPU's
    // AMX tiles (or only its vector units) carry int8 and bf16 products.
    Verdict v = cpu_execution_verdict();
    if (v.ok)
      v.reason += fmt::format("; products: f32 GEMM {}, int8 GEMM {}, bf16 {}",
                              gemm_isa_name(gemm_isa()), int8_isa_name(int8_isa()),
                              bf16_unit() != Bf16Unit::kNone
                                  ? fmt::format("on {}", bf16_unit_name(bf16_unit()))
                                  : "widened to f32");
    return v;
  }

  std::unique_ptr<Executable> compile(const lir::Program& program) override {
    return std::make_unique<CpuExecutable>(program);
  }

  std::vector<Artifact> emit(const lir::Program& program, const std::filesystem::path& dir) override {
    // The generated C, the shared object built from it and a build report (codegen_emit.h).
    return emit_cpu_artifacts(program, dir);
  }

  // "rlx.deployable": the kernel objects of a compiled folder, and the CPU they need.
  const void* extension(const std::string& name, uint32_t version) const override {
    if (name == sdk::kDeployableExtension && version == sdk::kDeployableVersion)
      return deployable_extension();
    return nullptr;
  }

  // Collectives through Gloo; the channel also becomes the communicator "world" that the
  // graph's collective ops run on (gloo_comm.h).
  std::unique_ptr<Channel> open_channel(const ChannelOptions& options) override {
    return open_gloo_channel(options);
  }

  // Host memory: device tensors reach the executables as host pointers.
  std::shared_ptr<Device> device() override { return device_; }

 private:
  std::shared_ptr<Device> device_ = std::make_shared<sdk::HostDevice>();
};

}  // namespace

}  // namespace rlx::cpu

RLX_DEFINE_TARGET_PLUGIN(rlx::cpu::CpuTarget)
