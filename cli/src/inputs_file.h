// --inputs IN.safetensors for run and bench: one tensor per graph input, by the input's name.
// The file is read before the model is imported, so the importer can take the sizes of dims it
// cannot keep symbolic from the inputs' shapes.
#pragma once
#include <string>

#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {

// Reads the file; a user error when it is missing.
TensorMap read_inputs_file(const std::string& path);

// The shapes of the file's tensors, for the importer.
ImportOptions import_options_for(const TensorMap& inputs);

// One tensor per graph input. A missing input is a user error listing the model's inputs and
// the missing ones; a tensor the model does not take is a warning on stderr and is left out;
// i32 given for an i64 input (token ids) is widened, with a note. Other dtype and shape checks
// stay with the runtime, which knows the symbolic dims.
NamedTensors match_inputs(const Graph& graph, const TensorMap& file, const std::string& path);

}  // namespace rlx::cli
