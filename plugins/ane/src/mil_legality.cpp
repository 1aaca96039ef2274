// What the ane target accepts (mil_lowering.h): the MIR primitives and dtypes a CoreML ML
// Program holds with rlx's meaning, the HIR ops it writes as one MIL op, and the OS releases it
// writes packages for.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "mil_lowering.h"
#include "mil_ops.h"
#include "rlx/sdk/legality.h"

namespace rlx::ane {

namespace {

const Deployment kDeployments[] = {{"iOS15", "CoreML5", 6},   {"iOS16", "CoreML6", 7},
                                   {"iOS17", "CoreML7", 8},   {"iOS18", "CoreML8", 9},
                                   {"macOS12", "CoreML5", 6}, {"macOS13", "CoreML6", 7},
                                   {"macOS14", "CoreML7", 8}, {"macOS15", "CoreML8", 9}};

bool lowercase_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool holds(DType d) {
  return d == DType::kF32 || d == DType::kF16 || d == DType::kI32 || d == DType::kBool;
}

Verdict dtype_refusal(const NodeSignature& s) {
  if (Verdict v = sdk::refuse_complex(s, "MIL", "ane"); !v.ok) return v;
  std::vector<TensorType> all = s.inputs;
  all.insert(all.end(), s.outputs.begin(), s.outputs.end());
  for (const TensorType& t : all) {
    if (holds(t.dtype)) continue;
    if (t.dtype == DType::kF64) {
      // Decompositions write scalars as f64 constants converted to the compute dtype; the
      // lowering folds those pairs and refuses any other f64.
      if (s.op == "constant" || s.op == "convert") continue;
      return sdk::refuse_f64("CoreML's ML Program has no f64", "ane", s.op);
    }
    // QMatMul's int8 weights and u8 zero points, read by its lowering (mil_native.cpp); any
    // other reader of them is refused by its own check.
    if ((t.dtype == DType::kI8 || t.dtype == DType::kU8) && s.op == "constant") continue;
    if (t.dtype == DType::kI64) {
      if (s.op == "bitcast" || s.op == "constant" || s.op == "dim_size") continue;
      return Verdict::no(fmt::format(
          "MIL has no 64-bit integers, so ane holds i64 values as int32 word pairs and computes "
          "{} on them only through the split-i64 rewrite",
          s.op));
    }
    return Verdict::no(fmt::format(
        "ane computes in fp32, fp16, int32 and bool (the types of a CoreML ML Program), so it "
        "cannot compute the {} values of {}; convert them first (rlx never changes a dtype "
        "silently)",
        dtype_name(t.dtype), s.op));
  }
  return Verdict::yes();
}


}  // namespace

const Deployment* find_deployment(const std::string& name) {
  for (const Deployment& d : kDeployments)
    if (lowercase_equal(d.name, name)) return &d;
  return nullptr;
}

const char* deployment_names() {
  return "ios15,ios16,ios17,ios18,macos12,macos13,macos14,macos15";
}

Verdict can_lower(const NodeSignature& s) {
  if (Verdict v = sdk::primitive_only(s); !v.ok) return v;
  if (!kUnary.count(s.op) && !kBinary.count(s.op) && !kOther.count(s.op)) {
    if (s.op == "while")
      return Verdict::no(
          "ane emits no loops: CoreML's while_loop does not run on the Neural Engine, and rlx "
          "does not split a program between compute units");
    return Verdict::no(fmt::format("MIL has no operation for {}", s.op));
  }
  if (Verdict v = dtype_refusal(s); !v.ok) return v;
  const DType out = s.outputs.empty() ? DType::kF32 : s.outputs[0].dtype;
  const DType in = s.inputs.empty() ? out : s.inputs[0].dtype;
  if ((s.op == "and" || s.op == "or" || s.op == "xor" || s.op == "not") && out != DType::kBool)
    return Verdict::no(fmt::format(
        "MIL has logical operations on bool only, so ane cannot compute the bitwise {} of {} "
        "values",
        s.op, dtype_name(out)));
  if (s.op == "convert" && is_float(in) && (is_integer(out) || out == DType::kI64))
    return Verdict::no(fmt::format(
        "CoreML's cast leaves float values outside the integer range undefined, rlx's convert "
        "saturates: ane does not convert {} to {}",
        dtype_name(in), dtype_name(out)));
  if (s.op == "dot_general" && !is_float(out))
    return Verdict::no("MIL's matmul multiplies floats only, so ane has no integer dot_general");
  if ((s.op == "reduce_sum" || s.op == "reduce_prod" || s.op == "reduce_max" ||
       s.op == "reduce_min") &&
      out == DType::kBool)
    return Verdict::no(fmt::format("MIL reduces numbers, not bool values ({})", s.op));
  if (s.op == "bitcast" && (in != DType::kI64 && out != DType::kI64))
    return Verdict::no("ane reinterprets only i64 values as their int32 word pairs (bitcast)");
  return Verdict::yes();
}

bool is_native_op(const std::string& op) {
  // SiLU stays x * sigmoid(x): coremltools cannot evaluate MIL's silu, so nothing here could
  // check it.
  return op == "Linear" || op == "LayerNorm" || op == "Softmax" || op == "GELU" || op == "MatMul" ||
         op == "QMatMul";
}

namespace {

// QMatMul (docs/ir.md) with int8 weights held compressed; mil_native.cpp has the arithmetic.
Verdict claim_qmatmul(const NodeSignature& s) {
  const size_t n = s.inputs.size();
  const bool fixed = n >= 5;
  if (n < 3 || s.inputs[0].dtype != DType::kF32 || s.inputs[1].dtype != DType::kI8 ||
      s.inputs[2].dtype != DType::kF32 || s.inputs[0].rank() < 1 ||
      (fixed && (s.inputs[3].dtype != DType::kF32 || s.inputs[4].dtype != DType::kU8)))
    return Verdict::no("ane's QMatMul takes f32 activations, i8 weights and f32 scales");
  return Verdict{true,
                 fmt::format("MIL linear on int8 weights (constexpr_affine_dequantize), activations "
                             "rounded to u8 {} as rlx does, integer sums exact in fp32",
                             fixed ? "with the calibrated scale" : "per row at run time")};
}

}  // namespace

Verdict claim(const NodeSignature& s) {
  if (!is_native_op(s.op))
    return Verdict::no(
        fmt::format("MIL has no single operation for {}; its MIR decomposition "
                    "is emitted",
                    s.op));
  if (s.op == "QMatMul") return claim_qmatmul(s);
  for (const TensorType& t : s.inputs)
    if (t.dtype != DType::kF32)
      return Verdict::no(fmt::format(
          "ane emits {} as one MIL op for f32 only (MIL computes it in the operand's type; "
          "rlx's f16 form accumulates in f32), so its MIR decomposition is emitted",
          s.op));
  if (s.outputs.size() != 1) return Verdict::no(s.op + " with more than one output");
  if (s.op == "LayerNorm") {
    if (Verdict v = sdk::norm_form(s); !v.ok) return Verdict::no("MIL's layer_norm " + v.reason);
    return Verdict{true, "MIL layer_norm"};
  }
  if (s.op == "Linear" &&
      (s.inputs.size() < 2 || s.inputs[1].rank() != 2 || s.inputs[0].rank() < 1))
    return Verdict::no("MIL's linear needs a rank-2 weight [out, in]");
  if (s.op == "MatMul" && (s.inputs[0].rank() < 2 || s.inputs[1].rank() < 2))
    return Verdict::no("MIL's matmul is emitted for operands of rank >= 2; this one decomposes");
  if (s.op == "GELU") {
    auto it = s.attrs.find("approximate");
    const std::string mode = it == s.attrs.end() ? "none" : std::get<std::string>(it->second);
    if (mode != "none" && mode != "tanh")
      return Verdict::no("GELU's approximate must be none or tanh");
  }
  static const std::map<std::string, std::string> kNames = {
      {"Linear", "linear"}, {"Softmax", "softmax"}, {"GELU", "gelu"}, {"MatMul", "matmul"}};
  return Verdict{true, "MIL " + kNames.at(s.op)};
}

}  // namespace rlx::ane
