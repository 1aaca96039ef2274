// A minimal importer: "reads" any file by naming the graph after it, and fails for files whose
// name contains "fail" so the test can check the error crossing the boundary. With options
// (ABI 1.1) it names the graph after the sizes it got. Built with RLX_TEST_OLD_MINOR it says
// ABI 1.0 in its handshake, as a plugin built before ImportOptions existed would: the host must
// then never call load_with_options.
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
  rlx::Model load_with(const std::filesystem::path& path,
                       const rlx::ImportOptions& options) override {
    rlx::Model m = load(path);
    std::string& name = m.graphs["main"].name;
    name += ":with-options";
    for (const auto& [dim, size] : options.dim_values) name += " " + dim + "=" + std::to_string(size);
    for (const auto& [input, value] : options.input_values) name += " value:" + input;
    return m;
  }
};

}  // namespace

#ifdef RLX_TEST_OLD_MINOR
RLX_PLUGIN_EXPORT const RlxPluginAbi* rlx_plugin_abi() {
  static const RlxPluginAbi abi{RLX_ABI_MAJOR, 0, RLX_TOOLCHAIN_TAG, "importer"};
  return &abi;
}
RLX_PLUGIN_EXPORT void rlx_plugin_factory(rlx::sdk::PluginObjects* out) noexcept {
  out->importer = std::make_unique<rlx::sdk::detail::GuardedImporter>(std::make_unique<GoodImporter>());
}
#else
RLX_DEFINE_IMPORTER_PLUGIN(GoodImporter)
#endif
