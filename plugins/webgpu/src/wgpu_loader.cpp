#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "wgpu_api.h"

namespace rlx::webgpu {

namespace {

// The release this plugin's declarations (wgpu_api.h) were written against: the major version
// is wgpu's, which changes the C API's structs and callbacks.
constexpr uint32_t kMajor = 29;

struct Loaded {
  WgpuApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  std::vector<std::string> names;
  if (const char* p = std::getenv("RLX_WGPU_NATIVE"); p && *p) names.push_back(p);
  // The names wgpu-native's release archives and the `wgpu` Python wheel install it under.
  for (const char* n : {"libwgpu_native.so", "libwgpu_native-release.so", "libwgpu.so"}) names.push_back(n);
  void* lib = nullptr;
  std::string tried;
  for (const std::string& n : names) {
    lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      l.api.path = n;
      break;
    }
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", n, dlerror());
  }
  if (!lib) {
    l.error = fmt::format("wgpu-native (the WebGPU C library) was not found: tried {}. Set RLX_WGPU_NATIVE to "
                          "the path of libwgpu_native.so (the PyPI wheel `wgpu` ships it as "
                          "wgpu/resources/libwgpu_native-release.so)",
                          tried);
    return l;
  }
  std::string missing;
#define RLX_WGPU_FN(ret, name, ...)                                     \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, #name)); \
  if (!l.api.name && missing.empty()) missing = #name;
#include "wgpu_functions.inc"
#undef RLX_WGPU_FN
  if (!missing.empty()) {
    l.error = fmt::format("{} lacks {}: not a wgpu-native build of the WebGPU C API", l.api.path, missing);
    return l;
  }
  l.api.version = l.api.wgpuGetVersion();
  if ((l.api.version >> 24) != kMajor)
    l.error = fmt::format("{} is wgpu-native {}, but rlx speaks the C API of wgpu-native {}.x (PyPI wgpu 0.32); "
                          "point RLX_WGPU_NATIVE at that release",
                          l.api.path, wgpu_version_name(l.api.version), kMajor);
  return l;
}

}  // namespace

std::string wgpu_version_name(uint32_t v) {
  return fmt::format("{}.{}.{}.{}", v >> 24, (v >> 16) & 0xFF, (v >> 8) & 0xFF, v & 0xFF);
}

const WgpuApi* wgpu_loader(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace rlx::webgpu
