#include "folder_model.h"

#include <fmt/format.h>

#include "errors.h"
#include "model.h"

namespace rlx::cli {

registry::CompiledFolder load_compiled_folder(const GlobalOptions& global,
                                              const std::filesystem::path& dir,
                                              const std::optional<std::string>& target) {
  const registry::Registry& reg = plugin_registry(global, /*build_legality=*/false);
  try {
    // A folder runs where it was compiled for: auto (the fastest target here) means that one.
    const std::string wanted = target && *target != "auto" ? *target : std::string();
    registry::CompiledFolder folder = registry::CompiledFolder::load(reg, dir, wanted);
    if (global.verbose)
      print_note(
          fmt::format("loaded the compiled folder {} for {} in {:.3f} ms (compiled in "
                      "{:.3f} ms)",
                      dir.string(), folder.target_name(), folder.load_ms(), folder.compile_ms()));
    return folder;
  } catch (const registry::CompiledFolderError& e) {
    throw CliError(e.what(), e.remedy());
  }
}

Graph folder_inputs_graph(const registry::CompiledFolder& folder) {
  Graph g;
  for (const registry::TensorSpec& in : folder.inputs()) {
    TensorType t;
    t.dtype = in.dtype;
    for (int64_t d : in.shape) t.shape.push_back(Dim(d));
    g.add_input(in.name, t);
  }
  return g;
}

void refuse_compile_option(bool given, const std::string& option, const std::string& dir) {
  if (given)
    throw CliError(
        fmt::format("{} does not apply to the compiled folder {}: its compile is done", option,
                    dir),
        fmt::format("leave {} out, or give it to `rlx compile` (or run the model itself)", option));
}

}  // namespace rlx::cli
