// The ONNX importer plugin: `rlx run model.onnx ...` reaches the library through this.
#include "rlx/onnx/import.h"
#include "rlx/sdk/plugin.h"

namespace rlx::onnx {

class OnnxImporter final : public sdk::ImporterPlugin {
 public:
  std::string name() const override { return "onnx"; }
  std::string version() const override { return "0.1.0"; }
  Model load(const std::filesystem::path& path) override { return import_file(path); }
  Model load_with(const std::filesystem::path& path, const ImportOptions& options) override {
    return import_file(path, options);
  }
};

}  // namespace rlx::onnx

RLX_DEFINE_IMPORTER_PLUGIN(rlx::onnx::OnnxImporter)
