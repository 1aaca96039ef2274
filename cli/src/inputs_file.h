// The inputs of run and bench, by graph input name: a file (`--inputs IN.safetensors | IN.npz |
// IN.json`) and values on the command line (`--input NAME=1,2,3` shaped by `--input-shape
// NAME=2x8`, or `--input NAME=@x.npy`), which override the file's tensor of that name. They are
// read before the model is imported, so the importer can take the sizes of dims it cannot keep
// symbolic from the inputs' shapes; numbers without a dtype are typed once the model says which
// dtype each input takes.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/graph.h"
#include "rlx/core/model.h"
#include "rlx/core/runtime.h"
#include "rlx/core/safetensors.h"
#include "written_values.h"

namespace CLI {
class App;
}

namespace rlx::cli {

struct InputOptions {
  std::optional<std::string> file;  // --inputs
  std::vector<std::string> values;  // --input NAME=VALUES | NAME=@FILE.npy
  std::vector<std::string> shapes;  // --input-shape NAME=2x8
  bool given() const { return file || !values.empty(); }
};

// Declares --inputs, --input and --input-shape.
void add_input_options(CLI::App& app, InputOptions& into);

// One input as given, before the model is known.
struct GivenInput {
  std::string source;  // "in.npz", "--input ids": what messages name
  bool on_command_line = false;
  std::optional<Tensor> tensor;  // typed by its file (safetensors, .npz, .npy)
  WrittenValues values;          // otherwise numbers (JSON, --input), typed by the model
};

struct GivenInputs {
  std::map<std::string, GivenInput> by_name;
  std::string sources;  // "in.npz", "--input", "in.npz and --input"; empty when none given
};

// Reads the tensors of an --inputs folder (ONNX test data: input_0.pb, ...) by graph input name;
// the model's importer knows its format (input_folder_reader in model.h).
using FolderReader = std::function<TensorMap(const std::filesystem::path& folder)>;

// Reads the file (or folder) and the --input values; user errors for a missing or unreadable
// file, an unknown extension, a malformed --input or --input-shape.
GivenInputs read_inputs(const InputOptions& options, const FolderReader& read_folder);

// The shapes of the given inputs and their values, for the importer: it freezes the inputs whose
// values decide shapes (a Reshape's shape, a Slice's starts, a TopK's k) and leaves the rest.
ImportOptions import_options_for(const GivenInputs& inputs);

// The inputs the importer froze (Model::metadata[kFrozenInputsKey]), each named in a note on
// stderr and taken out of `inputs`, since the model no longer has them.
std::vector<std::string> take_frozen_inputs(const Model& model, GivenInputs& inputs);

// One tensor per graph input. A missing input is a user error listing the model's inputs and
// the missing ones; a file's tensor the model does not take is a warning on stderr and is left
// out, an --input it does not take an error (with the likely name); i32 given for an i64 input
// (token ids) is widened, with a note. Other dtype and shape checks stay with the runtime, which
// knows the symbolic dims.
NamedTensors match_inputs(const Graph& graph, const GivenInputs& inputs);

}  // namespace rlx::cli
