#include "model.h"

#include <fmt/format.h>

#include "args.h"
#include "rlx/core/ir_text.h"

namespace rlx::cli {

namespace fs = std::filesystem;

const registry::Registry& plugin_registry(const GlobalOptions& global, bool build_legality) {
  static const registry::Registry* reg = nullptr;
  if (!reg) {
    registry::Options options;
    options.plugin_paths = global.plugin_paths;
    options.build_legality = build_legality;
    reg = new registry::Registry(registry::Registry::discover(options));  // never freed, see .h
  }
  return *reg;
}

std::shared_ptr<Target> choose_target(const registry::Registry& reg, const std::string& name) {
  if (name.empty())
    throw UsageError("--target needs a name", "run `rlx --list-targets` to see the targets");
  if (name.find(',') != std::string::npos)
    throw CliError(fmt::format("placement over several targets ('{}') is not supported yet", name),
                   "name one target");
  return reg.target(name);
}

Model load_model(const registry::Registry& reg, const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw CliError(fmt::format("model '{}' does not exist", path.string()),
                   "check the path; MODEL is an rlx IR text file or a file an importer reads");
  if (auto importer = reg.importer_for(path)) return importer->load(path);
  if (fs::is_directory(path, ec))
    throw CliError(fmt::format("no importer reads the folder '{}'", path.string()),
                   "see the importers in `rlx --list-targets`; a Hugging Face folder needs its config.json");
  Model m;
  m.architecture = "ir";
  m.graphs["main"] = load_graph_file(path);
  return m;
}

}  // namespace rlx::cli
