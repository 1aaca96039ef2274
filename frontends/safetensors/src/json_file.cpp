#include "json_file.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "rlx/core/error.h"

namespace rlx::frontends {

json::Value read_json_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_user_error(fmt::format("{}: cannot open", path.string()));
  std::ostringstream text;
  text << f.rdbuf();
  try {
    json::Value v = json::parse(text.str());
    if (!v.as_object())
      throw_user_error(
          fmt::format("{}: expected a JSON object, found {}", path.string(), v.kind()));
    return v;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw_user_error(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
}

}  // namespace rlx::frontends
