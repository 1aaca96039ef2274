// The ONNX importer plugin: `rlx run model.onnx ...` reaches the library through this.
#include "rlx/onnx/import.h"
#include "rlx/sdk/plugin.h"

namespace rlx::onnx {

class OnnxImporter final : public sdk::ImporterPlugin {
 public:
  std::string name() const override { return "onnx"; }
  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    return import_file(path, options);
  }
  std::map<std::string, Tensor> read_inputs(const std::filesystem::path& model_path,
                                            const std::filesystem::path& folder) override {
    return read_test_data_inputs(model_path, folder);
  }
};

}  // namespace rlx::onnx

RLX_DEFINE_IMPORTER_PLUGIN(rlx::onnx::OnnxImporter)
