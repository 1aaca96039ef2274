// The CUDA driver API entry points the cuda target uses, resolved from libcuda.so.1 with dlopen on
// first use, so the plugin loads on machines without a driver and says why it cannot run there
// (docs/architecture.md section 4). The declarations are the driver's C ABI written out here
// (handles are opaque pointers, CUdeviceptr a 64-bit integer), so building the plugin needs no
// CUDA toolkit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace rlx::cuda {

using CuResult = int;  // CUresult: 0 is CUDA_SUCCESS
using CuDevice = int;
using CuDevicePtr = uint64_t;
using CuContext = struct CuContextOpaque*;
using CuModule = struct CuModuleOpaque*;
using CuFunction = struct CuFunctionOpaque*;
using CuStream = struct CuStreamOpaque*;
using CuGraph = struct CuGraphOpaque*;
using CuGraphExec = struct CuGraphExecOpaque*;
using CuEvent = struct CuEventOpaque*;

inline constexpr CuResult kCudaSuccess = 0;
inline constexpr CuResult kCudaErrorNoDevice = 100;
// CUdevice_attribute values.
inline constexpr int kAttrMaxThreadsPerBlock = 1;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
// CUfunction_attribute: the most threads a block of the kernel may have (64 for the SDK's
// cooperative kernels, which declare __launch_bounds__(64)).
inline constexpr int kFuncAttrMaxThreadsPerBlock = 0;
// CUstreamCaptureMode: only this thread's calls are checked while a stream records.
inline constexpr int kCaptureModeThreadLocal = 1;
// CUlaunchAttributeID: the launched kernel may start before the one before it in the stream has
// finished (it waits with griddepcontrol.wait; Hopper and later).
inline constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

// CUlaunchAttribute: the id, padded to 8 bytes, then a 64-byte union of which a dependent launch
// uses the first int (programmaticStreamSerializationAllowed).
struct CuLaunchAttribute {
  int id = 0;
  char pad[4] = {};
  union {
    char bytes[64];
    int allowed;
  } value = {};
};
static_assert(sizeof(CuLaunchAttribute) == 72);

// CUlaunchConfig.
struct CuLaunchConfig {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
  unsigned shared_bytes = 0;
  CuStream stream = nullptr;
  CuLaunchAttribute* attrs = nullptr;
  unsigned num_attrs = 0;
};

// The oldest driver the target accepts: CUDA 11.4, the first with cuGraphInstantiateWithFlags
// (cuDriverGetVersion's 1000 * major + 10 * minor).
inline constexpr int kMinDriverVersion = 11040;

struct DriverApi {
  CuResult (*cuInit)(unsigned flags) = nullptr;
  CuResult (*cuDriverGetVersion)(int* version) = nullptr;
  CuResult (*cuGetErrorName)(CuResult error, const char** name) = nullptr;
  CuResult (*cuGetErrorString)(CuResult error, const char** text) = nullptr;
  CuResult (*cuDeviceGetCount)(int* count) = nullptr;
  CuResult (*cuDeviceGet)(CuDevice* device, int ordinal) = nullptr;
  CuResult (*cuDeviceGetName)(char* name, int length, CuDevice device) = nullptr;
  CuResult (*cuDeviceGetAttribute)(int* value, int attribute, CuDevice device) = nullptr;
  CuResult (*cuDeviceTotalMem)(size_t* bytes, CuDevice device) = nullptr;  // _v2
  CuResult (*cuDevicePrimaryCtxRetain)(CuContext* context, CuDevice device) = nullptr;
  CuResult (*cuCtxSetCurrent)(CuContext context) = nullptr;
  CuResult (*cuStreamCreate)(CuStream* stream, unsigned flags) = nullptr;
  CuResult (*cuStreamSynchronize)(CuStream stream) = nullptr;
  CuResult (*cuMemAlloc)(CuDevicePtr* ptr, size_t bytes) = nullptr;  // _v2
  CuResult (*cuMemFree)(CuDevicePtr ptr) = nullptr;                  // _v2
  // Page-locked host memory for outputs (flags 0: this context's).
  CuResult (*cuMemHostAlloc)(void** data, size_t bytes, unsigned flags) = nullptr;
  CuResult (*cuMemFreeHost)(void* data) = nullptr;
  CuResult (*cuMemcpyHtoDAsync)(CuDevicePtr dst, const void* src, size_t bytes,
                                CuStream stream) = nullptr;  // _v2
  CuResult (*cuMemcpyDtoHAsync)(void* dst, CuDevicePtr src, size_t bytes,
                                CuStream stream) = nullptr;  // _v2
  CuResult (*cuMemcpyDtoDAsync)(CuDevicePtr dst, CuDevicePtr src, size_t bytes,
                                CuStream stream) = nullptr;  // _v2
  CuResult (*cuModuleLoadData)(CuModule* module, const void* image) = nullptr;
  CuResult (*cuModuleUnload)(CuModule module) = nullptr;
  CuResult (*cuModuleGetFunction)(CuFunction* function, CuModule module,
                                  const char* name) = nullptr;
  CuResult (*cuLaunchKernel)(CuFunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z,
                             unsigned shared_bytes, CuStream stream, void** params,
                             void** extra) = nullptr;
  CuResult (*cuFuncGetAttribute)(int* value, int attribute, CuFunction function) = nullptr;
  CuResult (*cuMemsetD8Async)(CuDevicePtr dst, unsigned char value, size_t bytes,
                              CuStream stream) = nullptr;
  CuResult (*cuMemGetInfo)(size_t* free, size_t* total) = nullptr;                // _v2
  CuResult (*cuStreamBeginCapture)(CuStream stream, int mode) = nullptr;          // _v2
  CuResult (*cuStreamEndCapture)(CuStream stream, CuGraph* graph) = nullptr;
  CuResult (*cuGraphInstantiateWithFlags)(CuGraphExec* exec, CuGraph graph,
                                          unsigned long long flags) = nullptr;
  CuResult (*cuGraphLaunch)(CuGraphExec exec, CuStream stream) = nullptr;
  CuResult (*cuGraphExecDestroy)(CuGraphExec exec) = nullptr;
  CuResult (*cuGraphDestroy)(CuGraph graph) = nullptr;
  // Events time RLX_PROFILE's kernels (flags 0: with timing).
  CuResult (*cuEventCreate)(CuEvent* event, unsigned flags) = nullptr;
  CuResult (*cuEventDestroy)(CuEvent event) = nullptr;  // _v2
  CuResult (*cuEventRecord)(CuEvent event, CuStream stream) = nullptr;
  CuResult (*cuEventElapsedTime)(float* ms, CuEvent start, CuEvent end) = nullptr;
  CuResult (*cuEventSynchronize)(CuEvent event) = nullptr;
  // A host function run in stream order (the cuda target's NCCL watchdog stamps when a
  // collective starts and ends on the device's timeline, in CUDA graphs too).
  CuResult (*cuLaunchHostFunc)(CuStream stream, void (*fn)(void* data), void* data) = nullptr;
  // CUDA 12.0 and later; nullptr on an older driver, which then launches every kernel plainly.
  CuResult (*cuLaunchKernelEx)(const CuLaunchConfig* config, CuFunction f, void** params,
                               void** extra) = nullptr;
};

// The resolved entry points, or nullptr with `why` set ("libcuda.so.1 not found (...)"). Loaded
// once per process and never unloaded.
const DriverApi* driver_api(std::string* why);

// "CUDA_ERROR_OUT_OF_MEMORY (2: out of memory)", from the driver's own names.
std::string cu_error_name(const DriverApi& cu, CuResult code);

}  // namespace rlx::cuda
