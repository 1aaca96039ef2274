// What an int8 target (cortexm, fpga) claims and refuses, in one place: static-form QMatMul, and
// QConv with the pools where the target lowers them, the Relu fused into their requantization,
// Softmax where the target computes it, the constants that feed them and reshapes; every float computation refused by name with the way out (`rlx quantize --scheme
// int8`), so a device build never carries a float layer the user did not see.
#pragma once
#include <string>

#include "rlx/core/target.h"

namespace rlx::int8 {

// How a target says it in its refusals.
struct TargetWords {
  std::string name;       // "fpga"
  std::string int8_only;  // "fpga generates int8 datapaths only (MAC arrays without float units)"
  std::string lowers;     // "QMatMul with calibrated activations, Relu"
  // Empty when the target claims Softmax (computed in integers at the end of the chain), else
  // its refusal.
  std::string softmax_refusal;
  // Empty when the target claims QConv, MaxPool, AveragePool and residual Adds (int8
  // convolution networks), else its refusal.
  std::string conv_refusal;
};

Verdict claim_native(const NodeSignature& s, const TargetWords& w);
// Only constants (weights, scales) and reshapes are primitives these targets take.
Verdict accepts_primitive(const NodeSignature& s, const TargetWords& w);

}  // namespace rlx::int8
