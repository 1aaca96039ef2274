// A minimal importer: "reads" any file by naming the graph after it, and fails for files whose
// name contains "fail" so the test can check the error crossing the boundary. Given options it
// names the graph after them; a name containing "user" fails as a user error (kind kUser).
#include <stdexcept>

#include "rlx/sdk/plugin.h"

namespace {

class GoodImporter final : public rlx::sdk::ImporterPlugin {
 public:
  std::string name() const override { return "abi_importer"; }
  rlx::Model load(const std::filesystem::path& path, const rlx::ImportOptions& options) override {
    const std::string file = path.filename().string();
    if (file.find("fail") != std::string::npos) throw std::runtime_error("cannot parse " + file);
    if (file.find("user") != std::string::npos) rlx::throw_user_error(file + " is not a tst model");
    rlx::Model m;
    std::string& name = m.graphs["main"].name;
    name = path.stem().string();
    if (options.empty()) return m;
    name += ":with-options";
    for (const auto& [dim, size] : options.dim_values) name += " " + dim + "=" + std::to_string(size);
    for (const auto& [input, value] : options.input_values) name += " value:" + input;
    return m;
  }
};

}  // namespace

RLX_DEFINE_IMPORTER_PLUGIN(GoodImporter)
