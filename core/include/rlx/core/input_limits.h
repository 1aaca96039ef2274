// Limits a model puts on the values and sizes of its integer inputs: token ids inside the
// vocabulary, a 0/1 attention mask, no more positions than the model has. The importer that
// knows them (the model builders) stores them in Model::metadata, so they cross the plugin
// boundary as strings; CompiledModel checks host inputs against them before a run, so a bad input
// gets one message naming the input, the value and the limit on every target, instead of an
// index error from inside whichever kernel reads it first (docs/models.md).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rlx/core/model.h"
#include "rlx/core/tensor.h"

namespace rlx {

struct InputLimit {
  std::string input;         // graph input name
  int64_t dim = -1;          // -1: bounds every value; otherwise the size of this dim
  int64_t min = 0, max = 0;  // inclusive
  std::string reason;        // what sets the limit, for messages: "vocab_size 1000"
};
using InputLimits = std::vector<InputLimit>;

// Model::metadata keys are "input_limit.<input>" (values) and "input_limit.<input>.dim<N>"
// (sizes); each holds "min,max,reason".
inline constexpr const char* kInputLimitPrefix = "input_limit.";

void add_input_limit(Model& model, const InputLimit& limit);
// The limits in `model`'s metadata; a malformed entry is a user error naming its key.
InputLimits input_limits(const Model& model);

// Throws a user error for the first input in `inputs` that breaks a limit: its name, the value
// and where it is (or the dim's size), and the allowed range with its reason. Inputs absent from
// `inputs` and non-integer tensors are not checked.
void check_input_limits(const InputLimits& limits, const std::map<std::string, Tensor>& inputs);

}  // namespace rlx
