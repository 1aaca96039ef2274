#include "hip_runtime.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "dynamic_library.h"

namespace rlx::rocm {

namespace {

struct Loaded {
  HipRuntimeApi api;
  void* handle = nullptr;
  std::string error;
};

Loaded load() {
  Loaded l;
  std::string tried;
  l.handle = cuda::open_first_library(
      rocm_library_candidates("RLX_HIP_RUNTIME",
                              {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}),
      &tried);
  if (!l.handle) {
    l.error = fmt::format(
        "libamdhip64.so not found (tried {}): install ROCm's HIP runtime (Debian: libamdhip64-5), "
        "or set RLX_HIP_RUNTIME to its path",
        tried);
    return l;
  }
  cuda::SymbolResolver resolve(l.handle, l.error,
                               "libamdhip64 lacks {}: HIP runtime older than ROCm 5");
  HipRuntimeApi& a = l.api;
  resolve(a.hipInit, "hipInit");
  resolve(a.hipRuntimeGetVersion, "hipRuntimeGetVersion");
  resolve(a.hipGetErrorName, "hipGetErrorName");
  resolve(a.hipGetErrorString, "hipGetErrorString");
  resolve(a.hipGetDeviceCount, "hipGetDeviceCount");
  resolve(a.hipSetDevice, "hipSetDevice");
  resolve(a.hipDeviceGetName, "hipDeviceGetName");
  resolve(a.hipDeviceGetAttribute, "hipDeviceGetAttribute");
  resolve(a.hipDeviceTotalMem, "hipDeviceTotalMem");
  resolve(a.hipGetDeviceProperties, "hipGetDeviceProperties");
  resolve(a.hipStreamCreate, "hipStreamCreate");
  resolve(a.hipStreamSynchronize, "hipStreamSynchronize");
  resolve(a.hipMalloc, "hipMalloc");
  resolve(a.hipFree, "hipFree");
  resolve(a.hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync");
  resolve(a.hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync");
  resolve(a.hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  resolve(a.hipModuleLoadData, "hipModuleLoadData");
  resolve(a.hipModuleUnload, "hipModuleUnload");
  resolve(a.hipModuleGetFunction, "hipModuleGetFunction");
  resolve(a.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::vector<std::string> rocm_library_candidates(const char* env,
                                                 const std::vector<std::string>& sonames) {
  std::vector<std::string> names;
  if (const char* p = std::getenv(env); p && *p) names.push_back(p);
  std::vector<std::string> dirs = {""};
  if (const char* root = std::getenv("ROCM_PATH"); root && *root)
    dirs.push_back(std::string(root) + "/lib/");
  dirs.push_back("/opt/rocm/lib/");
  for (const std::string& dir : dirs)
    for (const std::string& so : sonames) names.push_back(dir + so);
  return names;
}

const HipRuntimeApi* hip_runtime_api(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return nullptr;
  }
  return &l.api;
}

void* hip_runtime_handle() {
  return loaded().handle;
}

std::string hip_error_name(const HipRuntimeApi& hip, HipError code) {
  const char* name = hip.hipGetErrorName(code);
  const char* text = hip.hipGetErrorString(code);
  if (!name) return fmt::format("HIP error {}", code);
  // ROCm 5.2's hipGetErrorString answers the name again.
  if (!text || std::string_view(text) == name) return fmt::format("{} ({})", name, code);
  return fmt::format("{} ({}: {})", name, code, text);
}

}  // namespace rlx::rocm
