// Where plugins are looked for, in precedence order (docs/architecture.md section 4). The rlx
// binary's own prefix is part of the list so a relocated install, or the uninstalled build tree,
// finds the plugins next to it without any environment variable.
#include <dlfcn.h>

#include <cstdlib>
#include <set>

#include "internal.h"

#ifndef RLX_PLUGINS_FROM_LIBDIR
#define RLX_PLUGINS_FROM_LIBDIR "../share/rlx/plugins.d"
#endif
#ifndef RLX_INSTALL_DATADIR
#define RLX_INSTALL_DATADIR "share"
#endif

namespace rlx::registry {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::vector<std::string> split_colon(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));  // empty entries mean nothing
    start = end + 1;
  }
  return out;
}

// <prefix>/share/rlx/plugins.d where <prefix> is dirname(dirname(running binary)).
std::optional<fs::path> install_prefix_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return std::nullopt;
  fs::path datadir = RLX_INSTALL_DATADIR;
  // An absolute CMAKE_INSTALL_DATADIR does not move with the prefix.
  if (datadir.is_absolute()) return datadir / "rlx" / "plugins.d";
  return exe.parent_path().parent_path() / datadir / "rlx" / "plugins.d";
}

// <prefix>/share/rlx/plugins.d where <prefix> is the one this library is installed in. It differs
// from the binary's when rlx is embedded: a Python wheel holds librlx_registry and the plugins
// under its package folder while the running binary is python.
[[maybe_unused]] std::optional<fs::path> library_prefix_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&library_prefix_dir), &info) || !info.dli_fname)
    return std::nullopt;
  std::error_code ec;
  fs::path library = fs::canonical(info.dli_fname, ec);
  if (ec) return std::nullopt;
  return (library.parent_path() / RLX_PLUGINS_FROM_LIBDIR).lexically_normal();
}

}  // namespace

namespace detail {

std::optional<std::string> plugins_disabled_note() {
  std::string v = env("RLX_DISABLE_PLUGINS");
  if (v.empty() || v == "0") return std::nullopt;
  return "plugins are disabled by RLX_DISABLE_PLUGINS=" + v +
         ": no plugin was loaded (unset it or set it to 0 to load plugins)";
}

}  // namespace detail

std::vector<SearchDir> plugin_search_dirs(const Options& options) {
  std::vector<SearchDir> candidates;
  for (const fs::path& p : options.plugin_paths) candidates.push_back({p, "--plugin-path"});
  for (const std::string& p : split_colon(env("RLX_PLUGIN_PATH")))
    candidates.push_back({p, "RLX_PLUGIN_PATH"});

  std::string data_home = env("XDG_DATA_HOME");
  if (data_home.empty() && !env("HOME").empty()) data_home = env("HOME") + "/.local/share";
  if (!data_home.empty()) candidates.push_back({fs::path(data_home) / "rlx/plugins.d", "user"});

  if (auto dir = install_prefix_dir()) candidates.push_back({*dir, "install prefix"});
#ifdef RLX_SEARCH_LIBRARY_PREFIX
  if (auto dir = library_prefix_dir()) candidates.push_back({*dir, "library prefix"});
#endif

  std::string data_dirs = env("XDG_DATA_DIRS");
  if (data_dirs.empty()) data_dirs = "/usr/local/share:/usr/share";
  for (const std::string& d : split_colon(data_dirs))
    candidates.push_back({fs::path(d) / "rlx/plugins.d", "system"});

  // The same folder reached twice (a symlink, the install prefix also being /usr) is searched
  // once, at its highest precedence, so its plugins are not reported as shadowing themselves.
  std::vector<SearchDir> out;
  std::set<fs::path> seen;
  for (SearchDir& c : candidates) {
    std::error_code ec;
    if (!fs::is_directory(c.path, ec)) continue;
    fs::path key = fs::canonical(c.path, ec);
    if (ec) continue;
    if (!seen.insert(key).second) continue;
    // Absolute, so messages naming a manifest do not depend on the working directory.
    c.path = fs::absolute(c.path, ec).lexically_normal();
    if (!c.path.has_filename()) c.path = c.path.parent_path();
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace rlx::registry
