// The HIP runtime entry points the rocm target uses, resolved from libamdhip64 with dlopen on
// first use, so the plugin loads on machines without ROCm and says why it cannot run there
// (docs/architecture.md section 4). The declarations are HIP's C ABI written out here (handles
// are opaque pointers, device pointers void*), so building the plugin needs no ROCm headers.
// Tried in order: $RLX_HIP_RUNTIME (a path), libamdhip64.so, libamdhip64.so.6, .so.5 (Debian 12's
// libamdhip64-5), each also under $ROCM_PATH/lib and /opt/rocm/lib.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace rlx::rocm {

using HipError = int;  // hipError_t: 0 is hipSuccess
using HipStream = struct HipStreamOpaque*;
using HipModule = struct HipModuleOpaque*;
using HipFunction = struct HipFunctionOpaque*;

inline constexpr HipError kHipSuccess = 0;
inline constexpr HipError kHipErrorNoDevice = 100;
// hipDeviceAttribute_t values (the CUDA-compatible range of the enum, as numbered since ROCm 5).
inline constexpr int kHipAttrMaxThreadsPerBlock = 56;
inline constexpr int kHipAttrWarpSize = 87;

struct HipRuntimeApi {
  HipError (*hipInit)(unsigned flags) = nullptr;
  HipError (*hipRuntimeGetVersion)(int* version) = nullptr;
  const char* (*hipGetErrorName)(HipError error) = nullptr;
  const char* (*hipGetErrorString)(HipError error) = nullptr;
  HipError (*hipGetDeviceCount)(int* count) = nullptr;
  HipError (*hipSetDevice)(int ordinal) = nullptr;
  HipError (*hipDeviceGetName)(char* name, int length, int device) = nullptr;
  HipError (*hipDeviceGetAttribute)(int* value, int attribute, int device) = nullptr;
  HipError (*hipDeviceTotalMem)(size_t* bytes, int device) = nullptr;
  // hipDeviceProp_t changes layout between ROCm versions: filled into a buffer larger than any
  // of them and read only for the architecture name (hip_device.cpp).
  HipError (*hipGetDeviceProperties)(void* properties, int device) = nullptr;
  HipError (*hipStreamCreate)(HipStream* stream) = nullptr;
  HipError (*hipStreamSynchronize)(HipStream stream) = nullptr;
  HipError (*hipMalloc)(void** ptr, size_t bytes) = nullptr;
  HipError (*hipFree)(void* ptr) = nullptr;
  HipError (*hipMemcpyHtoDAsync)(void* dst, const void* src, size_t bytes,
                                 HipStream stream) = nullptr;
  HipError (*hipMemcpyDtoHAsync)(void* dst, void* src, size_t bytes, HipStream stream) = nullptr;
  HipError (*hipMemcpyDtoDAsync)(void* dst, void* src, size_t bytes, HipStream stream) = nullptr;
  HipError (*hipModuleLoadData)(HipModule* module, const void* image) = nullptr;
  HipError (*hipModuleUnload)(HipModule module) = nullptr;
  HipError (*hipModuleGetFunction)(HipFunction* function, HipModule module,
                                   const char* name) = nullptr;
  HipError (*hipModuleLaunchKernel)(HipFunction f, unsigned grid_x, unsigned grid_y,
                                    unsigned grid_z, unsigned block_x, unsigned block_y,
                                    unsigned block_z, unsigned shared_bytes, HipStream stream,
                                    void** params, void** extra) = nullptr;
};

// The resolved entry points, or nullptr with `why` set ("libamdhip64.so not found (...)"). Loaded
// once per process and never unloaded.
const HipRuntimeApi* hip_runtime_api(std::string* why);

// The library the runtime was loaded from, once loaded (hiprtc lives there in ROCm 5).
void* hip_runtime_handle();

// "hipErrorOutOfMemory (2: out of memory)", from the runtime's own names.
std::string hip_error_name(const HipRuntimeApi& hip, HipError code);

// The candidate paths for a ROCm library with these sonames ($ROCM_PATH/lib, /opt/rocm/lib and
// the loader's own search), `env` first when set.
std::vector<std::string> rocm_library_candidates(const char* env,
                                                 const std::vector<std::string>& sonames);

}  // namespace rlx::rocm
