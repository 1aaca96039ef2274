// The rten importer plugin: `rlx run model.rten ...` reaches the library through this.
#include "rlx/rten/import.h"
#include "rlx/sdk/plugin.h"

namespace rlx::rten {

class RtenImporter final : public sdk::ImporterPlugin {
 public:
  std::string name() const override { return "rten"; }
  Model load(const std::filesystem::path& path, const ImportOptions& options) override {
    return import_file(path, options);
  }
};

}  // namespace rlx::rten

RLX_DEFINE_IMPORTER_PLUGIN(rlx::rten::RtenImporter)
