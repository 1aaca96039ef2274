// Calibration for `rlx quantize`: the activations each Linear layer multiplies, observed by
// running the f32 model on the user's inputs. For --scheme int8 their range, the u8 scale and
// zero point QMatMul uses (rlx/core/quantize.h); for int4-weight their Gram matrix, which GPTQ
// rounds the weights for.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "rlx/core/model.h"
#include "rlx/core/quantize.h"
#include "rlx/core/safetensors.h"
#include "rlx/core/target.h"

namespace rlx::cli {

// The Linear layers of a graph, by the checkpoint name of their weight, with the value of their
// activations input (the weight is a param, or a Cast of one).
std::map<std::string, ValueId> linear_weights(const Graph& g);

struct CalibrationOptions {
  std::string source;             // where the inputs came from, for messages (the file's path)
  TensorMap inputs;               // the model's inputs, rows along axis 0
  std::string method = "minmax";  // "minmax" | "percentile"
  double percentile = 99.99;   // percentile: the share of values inside the range
  int64_t batch = 8;           // rows per run
  bool gram = false;           // also sum X^T X of each layer's activations (GPTQ)
};

// X^T X of one Linear layer's activations X [rows, k] (every token of every calibration row),
// shared by the layers that read the same X (q, k and v).
struct Gram {
  int64_t k = 0, rows = 0;                   // rows: the tokens summed
  std::shared_ptr<std::vector<double>> xtx;  // [k, k]
};

// Each input channel's extremes over the calibration tokens (SmoothQuant's statistics).
struct ChannelRanges {
  std::vector<float> lo, hi;  // [k]
};

struct Calibration {
  int64_t rows = 0;    // calibration rows run (sentences, for text)
  int64_t tokens = 0;  // activation rows the layers saw: tokens, less the padding a mask marks
  std::map<std::string, quant::U8Params> ranges;  // weight name -> its activations' u8 parameters
  std::map<std::string, ChannelRanges> channels;  // weight name -> its activations' channels
  std::map<std::string, Gram> grams;              // weight name -> X^T X, when asked (gram)
};

// What the model's Linear layers multiply, on the calibration inputs. Reports each batch on
// stderr unless quiet.
Calibration calibrate(const Model& model, std::shared_ptr<Target> target,
                      const CalibrationOptions& o, bool quiet);

}  // namespace rlx::cli
