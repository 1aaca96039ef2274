// The library a manifest names must be the plugin's own file, beside its manifest: a manifest in
// RLX_PLUGIN_PATH naming "/abs/lib.so" or "../lib.so" (or a symlink out of the folder) would make
// rlx load any library on the machine in the plugin's name.
#include <fmt/format.h>

#include "internal.h"

namespace rlx::registry::detail {

namespace fs = std::filesystem;

std::variant<fs::path, std::string> resolve_library(const fs::path& manifest_path,
                                                    const std::string& library) {
  const fs::path folder = manifest_path.parent_path();
  auto outside = [&](const std::string& how) {
    return fmt::format(
        "{}: [plugin] library \"{}\" {}; it must name a file in the manifest's folder ({}): put "
        "the library beside the manifest and name it by its file name",
        manifest_path.string(), library, how, folder.string());
  };
  const fs::path named(library);
  if (named.is_absolute()) return outside("is an absolute path");
  const fs::path normal = named.lexically_normal();
  if (!normal.empty() && *normal.begin() == "..") return outside("leads out of it");
  // Not there: check_loadable says so.
  const fs::path path = folder / named;
  std::error_code ec;
  if (!fs::exists(path, ec)) return path;
  // There: its real path decides, so a symlink out of the folder is refused as well.
  const fs::path real_folder = fs::canonical(folder, ec);
  const fs::path real = ec ? fs::path() : fs::canonical(path, ec);
  if (ec) return outside("cannot be resolved (" + ec.message() + ")");
  const fs::path relative = real.lexically_relative(real_folder);
  if (relative.empty() || *relative.begin() == "..")
    return outside(fmt::format("resolves to {}, outside it", real.string()));
  return path;
}

}  // namespace rlx::registry::detail
