// Checks what a manifest says the plugin needs from the machine before the plugin is loaded, so
// "unavailable" can name the missing piece instead of surfacing a loader error.
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/utsname.h>

#include <algorithm>
#include <map>

#include "internal.h"

namespace rlx::registry::detail {
namespace {

// What to install for the vendor runtimes plugins commonly need; the generic advice covers the
// rest.
std::string install_hint(const std::string& library) {
  static const std::map<std::string, std::string> kHints = {
      {"libcuda.so", "the NVIDIA driver"},
      {"libamdhip64.so", "the ROCm HIP runtime"},
      {"libze_loader.so", "the oneAPI Level Zero loader (level-zero)"},
      {"libvulkan.so", "a Vulkan loader (libvulkan1) and your GPU's Vulkan driver"},
      {"libOpenCL.so", "an OpenCL ICD loader (ocl-icd-libopencl1) and your device's ICD"},
      {"libEGL.so", "libEGL (libegl1) and your GPU's GL driver"},
      {"libtpu.so", "libtpu"},
  };
  size_t so = library.find(".so");
  std::string stem = so == std::string::npos ? library : library.substr(0, so + 3);  // no version
  auto it = kHints.find(stem);
  std::string what = it != kHints.end() ? it->second : "the package that provides it";
  return "install " + what + ", or add its folder to LD_LIBRARY_PATH";
}

bool platform_matches(const std::string& wanted, const std::string& os, const std::string& arch) {
  return wanted == os || wanted == arch || wanted == os + "-" + arch;
}

}  // namespace

std::string platform_tag() {
  std::string arch = "unknown";
  utsname u{};
  if (uname(&u) == 0) arch = u.machine;
#if defined(__linux__)
  return "linux-" + arch;
#elif defined(__APPLE__)
  return "macos-" + arch;
#else
  return "unknown-" + arch;
#endif
}

std::optional<std::string> probe_requirements(const Manifest& manifest) {
  if (!manifest.platforms.empty()) {
    std::string tag = platform_tag();
    std::string os = tag.substr(0, tag.find('-'));
    std::string arch = tag.substr(tag.find('-') + 1);
    bool ok = std::any_of(manifest.platforms.begin(), manifest.platforms.end(),
                          [&](const std::string& p) { return platform_matches(p, os, arch); });
    if (!ok)
      return fmt::format("built for {}, this machine is {}", fmt::join(manifest.platforms, ", "),
                         tag);
  }
  for (const std::string& lib : manifest.requires_libraries) {
    // RTLD_LOCAL keeps the probe from changing symbol resolution for anything loaded later, and
    // the handle is closed at once: the plugin opens the runtime itself when it needs it.
    dlerror();
    void* handle = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle) {
      dlclose(handle);
      continue;
    }
    const char* err = dlerror();
    std::string why = err ? err : "";
    if (why.empty() || why.find("No such file") != std::string::npos)
      return fmt::format("requires {}, which was not found: {}", lib, install_hint(lib));
    // Present but unusable (wrong architecture, a missing dependency of its own).
    return fmt::format("requires {}, which could not be loaded: {}", lib, why);
  }
  return std::nullopt;
}

}  // namespace rlx::registry::detail
