#include "cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "dynamic_library.h"

namespace rlx::cuda {

namespace {

struct Loaded {
  DriverApi api;
  std::string error;
};

Loaded load() {
  Loaded l;
  // libcuda.so.1 is the driver's soname; the toolkit's stub libcuda.so must never be loaded (it
  // fails every call), so the unversioned name is not tried.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    l.error = fmt::format("libcuda.so.1 not found ({}): install the NVIDIA driver", dlerror());
    return l;
  }
  SymbolResolver resolve(lib, l.error, "libcuda.so.1 lacks {}: driver older than CUDA 11.4");
  DriverApi& a = l.api;
  resolve(a.cuInit, "cuInit");
  resolve(a.cuDriverGetVersion, "cuDriverGetVersion");
  resolve(a.cuGetErrorName, "cuGetErrorName");
  resolve(a.cuGetErrorString, "cuGetErrorString");
  resolve(a.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(a.cuDeviceGet, "cuDeviceGet");
  resolve(a.cuDeviceGetName, "cuDeviceGetName");
  resolve(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(a.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  resolve(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(a.cuStreamCreate, "cuStreamCreate");
  resolve(a.cuStreamSynchronize, "cuStreamSynchronize");
  resolve(a.cuMemAlloc, "cuMemAlloc_v2");
  resolve(a.cuMemFree, "cuMemFree_v2");
  resolve(a.cuMemHostAlloc, "cuMemHostAlloc");
  resolve(a.cuMemFreeHost, "cuMemFreeHost");
  resolve(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  resolve(a.cuModuleLoadData, "cuModuleLoadData");
  resolve(a.cuModuleUnload, "cuModuleUnload");
  resolve(a.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(a.cuLaunchKernel, "cuLaunchKernel");
  resolve(a.cuFuncGetAttribute, "cuFuncGetAttribute");
  resolve(a.cuMemsetD8Async, "cuMemsetD8Async");
  resolve(a.cuMemGetInfo, "cuMemGetInfo_v2");
  resolve(a.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(a.cuStreamEndCapture, "cuStreamEndCapture");
  resolve(a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  resolve(a.cuGraphLaunch, "cuGraphLaunch");
  resolve(a.cuGraphExecDestroy, "cuGraphExecDestroy");
  resolve(a.cuGraphDestroy, "cuGraphDestroy");
  resolve(a.cuEventCreate, "cuEventCreate");
  resolve(a.cuEventDestroy, "cuEventDestroy_v2");
  resolve(a.cuEventRecord, "cuEventRecord");
  resolve(a.cuEventElapsedTime, "cuEventElapsedTime");
  resolve(a.cuEventSynchronize, "cuEventSynchronize");
  resolve(a.cuLaunchHostFunc, "cuLaunchHostFunc");
  // Optional: without it (a driver older than CUDA 12.0) kernels are launched one after another.
  if (l.error.empty())
    a.cuLaunchKernelEx = reinterpret_cast<decltype(a.cuLaunchKernelEx)>(dlsym(lib, "cuLaunchKernelEx"));
  return l;
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    if (why) *why = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

std::string cu_error_name(const DriverApi& cu, CuResult code) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.cuGetErrorName(code, &name) != kCudaSuccess || !name)
    return fmt::format("CUDA error {}", code);
  if (cu.cuGetErrorString(code, &text) != kCudaSuccess || !text)
    return fmt::format("{} ({})", name, code);
  return fmt::format("{} ({}: {})", name, code, text);
}

}  // namespace rlx::cuda
