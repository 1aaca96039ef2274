// A multilayer perceptron classifier graph, the model `rlx train --model mlp:784,128,10` trains.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rlx/core/graph.h"

namespace rlx {

// Input "x": f32[batch, sizes[0]]; Linear layers to sizes.back() with ReLU between them.
// Parameters "fc<i>.weight" [out, in] uniform(-1, 1) * sqrt(2 / in) from `seed`, "fc<i>.bias"
// zeros. With `with_loss` the graph also takes "labels" (i32[batch]) and its first output is
// the mean softmax cross-entropy ("loss"); without, its output is the logits.
Graph mlp_classifier(const std::vector<int64_t>& sizes, uint64_t seed, bool with_loss);
// "mlp:784,128,10" -> {784, 128, 10}; a user error says what is wrong with another text.
std::vector<int64_t> parse_mlp_spec(const std::string& text);

}  // namespace rlx
