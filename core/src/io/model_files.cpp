#include "rlx/core/model_files.h"

#include <fmt/format.h>

#include <system_error>

#include "rlx/core/error.h"

namespace rlx {
namespace fs = std::filesystem;

namespace {

bool lies_inside(const fs::path& path, const fs::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p)
    if (p == path.end() || *p != *f) return false;
  return p != path.end();
}

}  // namespace

fs::path file_in_model_folder(const fs::path& folder, const std::string& name, const std::string& who) {
  const fs::path path = folder / name;
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  if (ec)
    throw Error(ErrorKind::kUser, fmt::format("{} names '{}', which cannot be found at {} ({})", who, name,
                                              path.string(), ec.message()));
  const fs::path real_folder = fs::canonical(folder.empty() ? fs::path(".") : folder, ec);
  if (ec || !lies_inside(real, real_folder))
    throw Error(ErrorKind::kUser,
                fmt::format("{} names '{}', which resolves to {}, outside the model's folder {}: rlx reads "
                            "only files inside it (copy the file into the folder instead of linking it)",
                            who, name, real.string(), real_folder.string()));
  if (!fs::is_regular_file(real, ec))
    throw Error(ErrorKind::kUser,
                fmt::format("{} names '{}', which is not a regular file ({} is a folder, FIFO, socket or "
                            "device): rlx reads model data from regular files only",
                            who, name, real.string()));
  return real;
}

}  // namespace rlx
