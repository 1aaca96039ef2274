// Where the probe helper is, how long a plugin may take to answer it, and where verdicts are
// kept: settled once per discovery from Options and the environment.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "probe.h"

#ifndef RLX_PROBE_HELPER_FROM_LIBDIR
#define RLX_PROBE_HELPER_FROM_LIBDIR "../libexec/rlx/rlx-plugin-probe"
#endif

namespace rlx::registry::detail {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// $RLX_CACHE_DIR, else $XDG_CACHE_HOME/rlx, else ~/.cache/rlx: the folder the cpu target's kernel
// cache uses too (docs/targets.md).
fs::path probe_cache_dir() {
  fs::path base;
  if (std::string d = env("RLX_CACHE_DIR"); !d.empty())
    base = d;
  else if (std::string x = env("XDG_CACHE_HOME"); !x.empty())
    base = fs::path(x) / "rlx";
  else if (std::string h = env("HOME"); !h.empty())
    base = fs::path(h) / ".cache" / "rlx";
  else
    return {};
  return base / "plugin-probe";
}

}  // namespace

fs::path installed_probe_helper() {
  // Relative to this library rather than to the running program: rlx, a test program and an
  // embedder all link the same librlx_registry, which sits in <prefix>/<libdir> when installed
  // and in <build>/<libdir> in the build tree, with the helper at the same place relative to it.
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&installed_probe_helper), &info) || !info.dli_fname)
    return {};
  std::error_code ec;
  fs::path library = fs::canonical(info.dli_fname, ec);
  if (ec) return {};
  return (library.parent_path() / RLX_PROBE_HELPER_FROM_LIBDIR).lexically_normal();
}

ProbeSettings probe_settings(const Options& options, bool plugins_to_load,
                             std::vector<Problem>& problems) {
  ProbeSettings s;
  s.cache_dir = probe_cache_dir();
  s.helper = options.probe_helper ? *options.probe_helper : installed_probe_helper();
  std::error_code ec;
  if (s.helper.empty() || !fs::is_regular_file(s.helper, ec) ||
      access(s.helper.c_str(), X_OK) != 0) {
    if (plugins_to_load)
      problems.push_back(
          {s.helper,
           "the plugin probe (rlx-plugin-probe) is missing here, so plugins are loaded "
           "into rlx unchecked and one that crashes or hangs takes rlx with it: "
           "reinstall rlx"});
    s.helper.clear();
  }
  if (std::string t = env(kProbeTimeoutEnv); !t.empty()) {
    char* end = nullptr;
    double seconds = std::strtod(t.c_str(), &end);
    if (end != t.c_str() && *end == '\0' && std::isfinite(seconds) && seconds > 0)
      s.timeout_s = seconds;
    else if (plugins_to_load)
      problems.push_back({{},
                          fmt::format("{}=\"{}\" is not a number of seconds above 0; plugins "
                                      "get the default {:g} s to answer the probe",
                                      kProbeTimeoutEnv, t, kDefaultProbeTimeoutS)});
  }
  return s;
}

}  // namespace rlx::registry::detail
