#include "int8_legality.h"

#include <fmt/format.h>

namespace rlx::int8 {

namespace {

std::string refusal(const NodeSignature& s, const TargetWords& w) {
  auto has_float = [](const std::vector<TensorType>& ts) {
    for (const TensorType& t : ts)
      if (is_float(t.dtype)) return true;
    return false;
  };
  if (has_float(s.inputs) || has_float(s.outputs))
    return fmt::format(
        "{} computes in floating point, and {}; quantize the model with `rlx quantize --scheme "
        "int8` first",
        s.op, w.int8_only);
  return fmt::format("{} lowers int8 chains ({}); {} is not one of them", w.name, w.lowers, s.op);
}

}  // namespace

Verdict claim_native(const NodeSignature& s, const TargetWords& w) {
  if (s.op == "QMatMul") {
    if (s.inputs.size() < 5)
      return Verdict::no(fmt::format(
          "QMatMul with per-row run-time activation ranges (int8-dynamic) needs float on the "
          "device; {}: quantize with `rlx quantize --scheme int8`",
          w.int8_only));
    return Verdict::yes();
  }
  // Add: a residual, fused into the requantization of the layer before it (checked when
  // lowered: one operand is that layer's result, the other a value kept from earlier).
  if (s.op == "QConv" || s.op == "MaxPool" || s.op == "AveragePool" || s.op == "Add")
    return w.conv_refusal.empty() ? Verdict::yes() : Verdict::no(w.conv_refusal);
  // Fused into the requantization of the dense layer before it (checked when lowered).
  if (s.op == "Relu" || s.op == "Clip") return Verdict::yes();
  // Computed from the last layer's accumulators in integers (checked when lowered: it must end
  // the chain).
  if (s.op == "Softmax")
    return w.softmax_refusal.empty() ? Verdict::yes() : Verdict::no(w.softmax_refusal);
  return Verdict::no(refusal(s, w));
}

Verdict accepts_primitive(const NodeSignature& s, const TargetWords& w) {
  if (s.op == "constant" || s.op == "reshape") return Verdict::yes();
  return Verdict::no(refusal(s, w));
}

}  // namespace rlx::int8
