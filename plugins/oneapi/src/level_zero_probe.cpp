#include "level_zero_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace rlx::oneapi {

namespace {

// The three Level Zero entry points the probe needs (ze_api.h; handles are opaque pointers,
// ze_result_t and ze_init_flags_t are 32-bit).
using ZeResult = uint32_t;
using ZeInit = ZeResult (*)(uint32_t flags);
using ZeDriverGet = ZeResult (*)(uint32_t* count, void** drivers);
using ZeDeviceGet = ZeResult (*)(void* driver, uint32_t* count, void** devices);
constexpr uint32_t kZeInitFlagGpuOnly = 1;

LevelZeroProbe run_probe() {
  LevelZeroProbe p;
  void* lib = dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    p.detail = "the Level Zero loader libze_loader.so.1 is not installed (libze1)";
    return p;
  }
  auto init = reinterpret_cast<ZeInit>(dlsym(lib, "zeInit"));
  auto driver_get = reinterpret_cast<ZeDriverGet>(dlsym(lib, "zeDriverGet"));
  auto device_get = reinterpret_cast<ZeDeviceGet>(dlsym(lib, "zeDeviceGet"));
  if (!init || !driver_get || !device_get) {
    p.detail = "libze_loader.so.1 lacks zeInit, zeDriverGet or zeDeviceGet";
    return p;
  }
  // Nothing else may be called unless zeInit succeeded.
  if (ZeResult r = init(kZeInitFlagGpuOnly); r != 0) {
    p.detail = fmt::format("Level Zero has no usable GPU driver here (zeInit returned 0x{:08x}); "
                           "install Intel's GPU driver (intel-level-zero-gpu) on a machine with an "
                           "Intel GPU",
                           r);
    return p;
  }
  uint32_t n = 0;
  if (driver_get(&n, nullptr) != 0 || n == 0) {
    p.detail = "Level Zero initialised but reports no driver";
    return p;
  }
  std::vector<void*> drivers(n);
  driver_get(&n, drivers.data());
  for (void* d : drivers) {
    uint32_t c = 0;
    if (device_get(d, &c, nullptr) == 0) p.devices += static_cast<int>(c);
  }
  p.driver = p.devices > 0;
  p.detail = p.driver ? fmt::format("Level Zero reports {} GPU device(s)", p.devices)
                      : "Level Zero initialised but its drivers report no device";
  return p;
}

}  // namespace

const LevelZeroProbe& probe_level_zero() {
  static const LevelZeroProbe p = run_probe();
  return p;
}

}  // namespace rlx::oneapi
