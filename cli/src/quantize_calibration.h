// Calibration for `rlx quantize --scheme int8`: the range of the activations each Linear layer
// multiplies, observed by running the f32 model on the user's inputs. Its result is the u8
// scale and zero point QMatMul uses for them (rlx/core/quantize.h).
#pragma once
#include <map>
#include <string>

#include "commands.h"
#include "rlx/core/model.h"
#include "rlx/core/quantize.h"
#include "rlx/core/target.h"

namespace rlx::cli {

// The Linear layers of a graph, by the checkpoint name of their weight, with the value of their
// activations input (the weight is a param, or a Cast of one).
std::map<std::string, ValueId> linear_weights(const Graph& g);

struct CalibrationOptions {
  std::string inputs;          // safetensors: the model's inputs, rows along axis 0
  std::string method = "minmax";  // "minmax" | "percentile"
  double percentile = 99.99;   // percentile: the share of values inside the range
  int64_t batch = 8;           // rows per run
};

// weight name -> the u8 parameters of its activations. Reports each batch on stderr unless quiet.
std::map<std::string, quant::U8Params> calibrate(const Model& model,
                                                 std::shared_ptr<Target> target,
                                                 const CalibrationOptions& o, bool quiet);

}  // namespace rlx::cli
