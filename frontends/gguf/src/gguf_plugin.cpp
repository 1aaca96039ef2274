// The GGUF importer plugin: llama.cpp model files (magic "GGUF").
#include "gguf_model.h"
#include "rlx/sdk/plugin.h"

namespace rlx::gguf {

class GgufImporter final : public sdk::ImporterPlugin {
 public:
  std::string name() const override { return "gguf"; }
  // Its dims stay symbolic and no input decides a shape, so the options need nothing here.
  Model load(const std::filesystem::path& path, const ImportOptions&) override {
    return load_model(path);
  }
};

}  // namespace rlx::gguf

RLX_DEFINE_IMPORTER_PLUGIN(rlx::gguf::GgufImporter)
