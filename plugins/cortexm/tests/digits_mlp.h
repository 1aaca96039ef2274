// The digits MLP of the cortexm tests: scikit-learn's 8x8 digits (tests/data), a 64-32-10 MLP
// trained here with plain SGD, calibrated and quantized with rlx's int8 rules
// (rlx/core/quantize.h) into a graph of static-form QMatMul nodes.
#pragma once
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx::cortexm::testing {

struct Digits {
  std::vector<float> x;  // [n, 64], pixel / 16
  std::vector<int> y;    // [n]
  int n = 0;
};
Digits load_digits(const std::string& gz_file);

struct Mlp {
  int in = 64, hidden = 32, out = 10;
  std::vector<float> w1, b1, w2, b2;  // w1 [hidden, in], w2 [out, hidden]
  // f32 logits of one sample
  std::vector<float> forward(const float* x, std::vector<float>* hidden_out = nullptr) const;
};
Mlp train_mlp(const Digits& d, int train_rows);

// The quantized graph: x f32[1, 64] -> QMatMul -> Relu [-> Clip {max = clip}] -> QMatMul
// [-> Softmax] -> f32[1, 10], activation ranges calibrated on the training rows.
Graph quantized_graph(const Mlp& m, const Digits& d, int train_rows, bool softmax = false,
                      float clip = 0);
// The same network in f32 (MatMul), which cortexm must refuse.
Graph float_graph(const Mlp& m);

}  // namespace rlx::cortexm::testing
