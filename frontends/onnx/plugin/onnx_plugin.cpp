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
};

}  // namespace rlx::onnx

RLX_DEFINE_IMPORTER_PLUGIN(rlx::onnx::OnnxImporter)
