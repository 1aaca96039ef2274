// A minimal importer: "reads" any file by naming the graph after it, and fails for files whose
// name contains "fail" so the test can check the error crossing the boundary.
#include <stdexcept>

#include "rlx/sdk/plugin.h"

namespace {

class GoodImporter final : public rlx::sdk::ImporterPlugin {
 public:
  std::string name() const override { return "abi_importer"; }
  std::string version() const override { return "0.0.2"; }
  rlx::Model load(const std::filesystem::path& path) override {
    if (path.filename().string().find("fail") != std::string::npos)
      throw std::runtime_error("cannot parse " + path.filename().string());
    rlx::Model m;
    m.graphs["main"].name = path.stem().string();
    return m;
  }
};

}  // namespace

RLX_DEFINE_IMPORTER_PLUGIN(GoodImporter)
