// The int8 program of a quantized MIR graph: what the int8 code generators (cortexm's C, fpga's
// SystemVerilog) emit and what the host reference runs. Every number the device computes with
// (int8 weights, int32 biases, fixed-point multipliers) is decided here, once, on the host;
// rlx_cm_int8.h (beside this file) has the arithmetic that uses them. It lives in the SDK because
// several targets generate code for it and no plugin may link another plugin's code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::int8 {

// A real multiplier as m * 2^-r, m in [2^30, 2^31), r in [1, 62].
struct FixedPoint {
  int32_t m = 0;
  int32_t r = 0;
};
// Refuses (user error naming `what`) multipliers outside what the int64 product can hold.
FixedPoint to_fixed_point(double real, const std::string& what);

// One dense layer (a QMatMul of the static form, with its ReLU fused).
struct DenseLayer {
  std::string name;           // the source node, for comments and messages
  int32_t n = 0, k = 0;       // out features, in features
  std::vector<int8_t> w;      // [n, k], row-major
  std::vector<int32_t> bias;  // [n]: the real bias, the input zero point's share folded in
  bool relu = false;
  // int8 output (not the last layer): the next layer's input parameters.
  bool int8_out = true;
  std::vector<int32_t> m;  // [n]
  std::vector<int8_t> r;   // [n]
  int32_t zero_out = 0, lo = -128, hi = 127;
  // int32 output (the last layer): real = acc * out_scale[n].
  std::vector<float> out_scale;
};

struct Int8Program {
  std::string input_name, output_name;
  int32_t input_size = 0;  // int8 elements of the input
  float input_scale = 1;   // real = input_scale * (q - input_zero)
  int32_t input_zero = 0;
  std::vector<DenseLayer> layers;
  int32_t output_size = 0;  // elements of the output: int32 accumulators, or int8 with softmax
  // A Softmax ends the chain: the output is int8 probabilities, real = (q + 128) / 256. The
  // multipliers turn each accumulator into its logit in Q12 (rlx_cm_int8.h).
  bool softmax = false;
  std::vector<int32_t> softmax_m;
  std::vector<int8_t> softmax_r;
  int32_t softmax_offset = 0;  // arena bytes before the softmax's int32/uint32 scratch
  // Bytes of the one arena: two int8 buffers the layers ping-pong between (the output has its
  // own caller-owned buffer), each as large as the widest intermediate.
  int32_t arena_bytes = 0;
};

// Reads a MIR graph after an int8 target's dispatch: one input, one output, a chain of
// static-form QMatMul nodes (constant weights and activation parameters) with optional Relu,
// optionally ended by a Softmax over the last axis. Anything else is refused with a user error
// naming the node and what the target needs instead; `target` ("cortexm", "fpga") starts every
// message, so the user knows which target refused.
Int8Program lower_int8(const Graph& mir, const std::string& target);

// The host int8 reference: runs `p` on one int8 input (p.input_size values) and returns the
// output (int32 accumulators, or int8 probabilities widened), with exactly the generated code's
// arithmetic.
std::vector<int32_t> run_reference(const Int8Program& p, const int8_t* input);

// The int8 input the device takes for a real-valued one (the first layer's quantization; u8
// rounding of rlx/core/quantize.h, shifted by 128).
std::vector<int8_t> quantize_input(const Int8Program& p, const float* x);

}  // namespace rlx::int8
