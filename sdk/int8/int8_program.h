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

// What one step of the program computes, on one sample in NCHW order.
enum class LayerKind {
  kDense,    // a QMatMul of the static form, its ReLU fused
  kConv,     // a QConv (grouped; depthwise when group = channels), its ReLU fused
  kMaxPool,  // int8 in, int8 out in the same quantization (max commutes with it)
  kAvgPool,  // the same, the window's mean of (q - zero) rounded half away from zero
};
const char* layer_kind_name(LayerKind k);

// The geometry of a convolution or pool (rlx_cm_window in rlx_cm_int8.h).
struct Window {
  int32_t c = 0, h = 0, w = 0;   // input channels, height, width
  int32_t kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pl = 0;  // kernel, strides, top/left pads
  int32_t oh = 0, ow = 0;        // output height, width
  int32_t group = 1;             // conv: c / group input channels per output channel
};

struct Layer {
  LayerKind kind = LayerKind::kDense;
  std::string name;           // the source node, for comments and messages
  int32_t n = 0, k = 0;       // dense: out and in features; conv: out channels and the
                              // weights per output channel (c / group * kh * kw); pools: 0
  Window win;                 // conv and pools
  std::vector<int8_t> w;      // dense [n, k] (columns in the device's order); conv
                              // [n, kh, kw, c / group] (NHWC windows)
  std::vector<int32_t> bias;  // [n]: the real bias, the input zero point's share folded in
  std::vector<int32_t> taps;  // conv with padding: [n, kh, kw] weight sums (empty otherwise)
  bool relu = false;
  // int8 output (not the last layer): the next layer's input parameters.
  bool int8_out = true;
  std::vector<int32_t> m;  // [n]
  std::vector<int8_t> r;   // [n]
  int32_t zero_in = 0;     // conv: the input's zero point, what padding reads; avgpool: the
                           // zero point of its values
  int32_t zero_out = 0, lo = -128, hi = 127;
  // int32 output (the last layer): real = acc * out_scale[n].
  std::vector<float> out_scale;
  int32_t in_size = 0, out_size = 0;  // int8 elements read and written
  // A residual Add fused into the requantization (dense and conv): out = requantize(acc) +
  // (skip - residual_zero) * residual_m * 2^-residual_r, with a ReLU of the accumulators before
  // the add when pre_relu (relu is then the ReLU after it).
  bool residual = false;
  int32_t residual_from = -1;  // the step whose output is the skip; -1: the model's input
  int32_t residual_zero = 0, residual_m = 0, residual_r = 0;
  bool pre_relu = false;
  // Where the step reads and writes: -1 is the model's input (in) or output (out, the last
  // step), else a slot of the arena (slot_bytes each).
  int32_t in_slot = -1, out_slot = -1, residual_slot = -1;
};

struct Int8Program {
  std::string input_name, output_name;
  int32_t input_size = 0;  // int8 elements of the input
  // An image input's [C, H, W] (empty otherwise): the device takes it channels-last (NHWC), as
  // every image activation; quantize_input puts it in that order.
  std::vector<int32_t> input_chw;
  float input_scale = 1;   // real = input_scale * (q - input_zero)
  int32_t input_zero = 0;
  std::vector<Layer> layers;  // the last one is dense, with int32 accumulators out
  int32_t output_size = 0;  // elements of the output: int32 accumulators, or int8 with softmax
  // A Softmax ends the chain: the output is int8 probabilities, real = (q + 128) / 256. The
  // multipliers turn each accumulator into its logit in Q12 (rlx_cm_int8.h).
  bool softmax = false;
  std::vector<int32_t> softmax_m;
  std::vector<int8_t> softmax_r;
  int32_t softmax_offset = 0;  // arena bytes before the softmax's int32/uint32 scratch
  // Bytes of the one arena: slots of slot_bytes (the widest intermediate, 4-byte aligned) the
  // steps write in turn, two, or three while a residual's skip is kept (the output has its own
  // caller-owned buffer), then the Softmax's scratch.
  int32_t slot_bytes = 0;
  int32_t arena_bytes = 0;
  bool has(LayerKind k) const;
};

// Reads a MIR graph after an int8 target's dispatch: one input, one output, a chain of
// static-form QConv and QMatMul nodes (constant weights and activation parameters), each with
// an optional Relu and Clip, MaxPool and AveragePool between them, residual Adds of a value
// that also feeds a quantized layer, reshapes anywhere, ended by a QMatMul and optionally a
// Softmax over the last axis. Anything else is refused with a user error
// naming the node and what the target needs instead; `target` ("cortexm", "fpga") starts every
// message, so the user knows which target refused.
Int8Program lower_int8(const Graph& mir, const std::string& target);

// The host int8 reference: runs `p` on one int8 input (p.input_size values) and returns the
// output (int32 accumulators, or int8 probabilities widened), with exactly the generated code's
// arithmetic.
std::vector<int32_t> run_reference(const Int8Program& p, const int8_t* input);

// The int8 input the device takes for a real-valued one (the first layer's quantization; u8
// rounding of rlx/core/quantize.h, shifted by 128; an image channels-last).
std::vector<int8_t> quantize_input(const Int8Program& p, const float* x);

}  // namespace rlx::int8
