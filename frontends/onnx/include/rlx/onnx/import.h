// The ONNX importer as a library: the plugin (frontends/onnx/plugin) wraps it, the conformance
// tests and the fuzzer call it directly. ModelProto -> rlx::Model with one HIR graph, "main".
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rlx/core/error.h"
#include "rlx/core/model.h"
#include "rlx/core/tensor.h"

namespace onnx {
class ModelProto;
}

namespace rlx::onnx {

// The options every importer takes (rlx/core/model.h); ONNX uses all three fields. Sizes from
// input_shapes fill the dims dim_values leaves open; an input's shape that contradicts the model
// is left for the runtime to report.
using ImportOptions = rlx::ImportOptions;

// Thrown when a node needs the value of a graph input at compile time (see input_values); the
// message names the node and the inputs.
class NeedsInputValues : public Error {
 public:
  NeedsInputValues(std::string message, std::vector<std::string> inputs)
      : Error(ErrorKind::kUser, std::move(message)), inputs_(std::move(inputs)) {}
  const std::vector<std::string>& inputs() const { return inputs_; }

 private:
  std::vector<std::string> inputs_;
};

// Reads `path` (external data files are found relative to its folder).
Model import_file(const std::filesystem::path& path, const ImportOptions& options = {});
// Reads a serialized ModelProto held in memory; `display_name` names it in messages and
// `base_dir` is where external data files would be.
Model import_bytes(std::string_view bytes, const std::string& display_name,
                   const std::filesystem::path& base_dir, const ImportOptions& options = {});

// Converts a ModelProto built in memory (the rten importer translates its graphs into one, so
// both formats share one operator table).
Model import_model(const ::onnx::ModelProto& model, const std::string& display_name,
                   const std::filesystem::path& base_dir, const ImportOptions& options = {});

// A serialized TensorProto (the input_N.pb / output_N.pb files of ONNX's test data), with its
// name. Throws a user error naming the file for anything rlx cannot represent.
std::pair<std::string, Tensor> read_tensor_file(const std::filesystem::path& path);

// The inputs of an ONNX test data set (a folder of input_0.pb, input_1.pb, ...) for the model at
// `model_path`, by graph input name: input_N.pb stands for the model's Nth input that is not an
// initializer, as onnx.backend.test maps them; a missing file is an optional input left out. A
// user error for a folder without such files (for a model with inputs), a file past the model's
// inputs or one that does not parse.
std::map<std::string, Tensor> read_test_data_inputs(const std::filesystem::path& model_path,
                                                    const std::filesystem::path& folder);

// ONNX's TensorProto.DataType number -> rlx dtype name, or a description of why it has none.
std::string describe_onnx_dtype(int onnx_dtype);

}  // namespace rlx::onnx
