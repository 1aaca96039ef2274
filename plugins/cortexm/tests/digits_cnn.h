// The digits CNN of the cortexm tests: scikit-learn's 8x8 digits through
//   conv 3x3 (1 -> 16, pad 1) + ReLU, max pool 2x2 (kept as a skip), depthwise conv 3x3
//   (16 groups, pad 1) + ReLU, conv 3x3 (16 -> 16, pad 1), + the skip, ReLU, average pool
//   2x2, dense 64 -> 10 (a residual block of the MobileNet kind),
// trained by rlx's Trainer on the cpu target (each convolution written as im2col in MIR
// primitives, which autodiff differentiates), then calibrated on the training rows and
// quantized with rlx's int8 rules (rlx/core/quantize.h) into QConv, MaxPool, AveragePool and
// QMatMul nodes.
#pragma once
#include <vector>

#include "digits_mlp.h"
#include "rlx/core/runtime.h"

namespace rlx::cortexm::testing {

struct Cnn {
  NamedTensors params;  // "c1.w" [16, 1, 3, 3], "c1.b", "dw.w" [16, 1, 3, 3], "dw.b",
                        // "c2.w" [16, 16, 3, 3], "c2.b", "fc.w" [10, 64], "fc.b"
  double final_loss = 0;
};
Cnn train_cnn(const Digits& d, int train_rows);

// f32 logits [rows, 10] of rows [first, first + rows) on the cpu target.
std::vector<float> cnn_logits(const Cnn& m, const Digits& d, int first, int rows);

// The quantized graph: x f32[1, 1, 8, 8] -> QConv -> Relu -> MaxPool (p) -> QConv (depthwise) ->
// Relu -> QConv -> Add p -> Relu -> AveragePool -> reshape -> QMatMul -> f32[1, 10].
Graph cnn_quantized_graph(const Cnn& m, const Digits& d, int train_rows);

}  // namespace rlx::cortexm::testing
