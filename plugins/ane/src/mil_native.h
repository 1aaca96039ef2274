// The HIR ops the ane target writes as MIL ops of their own (claim() in mil_lowering.h): Linear,
// MatMul, Softmax, GELU and LayerNorm as one MIL op each, and QMatMul as int8 weights held
// compressed (constexpr_affine_dequantize) with rlx's activation rounding and exact integer sums.
#pragma once
#include <string>
#include <vector>

#include "mil_block.h"
#include "rlx/core/graph.h"

namespace rlx::ane {

struct NativeOperands {
  const Node& node;
  std::string where;                // the node, as messages name it
  std::vector<std::string> inputs;  // each input's MIL value; "" for an i8 or u8 one
  std::vector<const Tensor*> held;  // each i8 or u8 input's constant value, else nullptr
  MilType out;
};

// Appends the node's MIL ops to `b` and returns the name of its result.
std::string emit_native(MilBlock& b, const NativeOperands& op);

// The most K (the contracted length) one fp32 product of u8 - zero activations (|.| <= 255) by
// int8 weights (|.| <= 127) keeps exact: every partial sum stays below 2^24.
inline constexpr int64_t kExactInt8Chunk = 512;

}  // namespace rlx::ane
