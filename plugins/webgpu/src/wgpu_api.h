// The part of the WebGPU C API (webgpu.h, plus wgpu-native's wgpu.h extensions) the webgpu target
// uses, declared here so the plugin builds without the headers and opens the library with dlopen.
// Layouts and values follow webgpu.h as wgpu-native v29 ships it (PyPI `wgpu` 0.32): strings are
// WGPUStringView, asynchronous calls take a CallbackInfo struct and return a WGPUFuture, and
// callbacks carry two userdata pointers. An older or newer wgpu-native with another ABI is
// refused by its version (wgpuGetVersion) before any struct crosses the boundary.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace rlx::webgpu {

// Opaque handles.
using WGPUInstance = struct WGPUInstanceImpl*;
using WGPUAdapter = struct WGPUAdapterImpl*;
using WGPUDevice = struct WGPUDeviceImpl*;
using WGPUQueue = struct WGPUQueueImpl*;
using WGPUBuffer = struct WGPUBufferImpl*;
using WGPUShaderModule = struct WGPUShaderModuleImpl*;
using WGPUComputePipeline = struct WGPUComputePipelineImpl*;
using WGPUBindGroupLayout = struct WGPUBindGroupLayoutImpl*;
using WGPUBindGroup = struct WGPUBindGroupImpl*;
using WGPUCommandEncoder = struct WGPUCommandEncoderImpl*;
using WGPUComputePassEncoder = struct WGPUComputePassEncoderImpl*;
using WGPUCommandBuffer = struct WGPUCommandBufferImpl*;

using WGPUBool = uint32_t;
using WGPUFlags = uint64_t;
// Enums are 32-bit in the C API (each has a Force32 member).
using WGPUEnum = uint32_t;

constexpr size_t kWgpuStrlen = SIZE_MAX;

struct WGPUStringView {
  const char* data = nullptr;
  size_t length = kWgpuStrlen;
};
inline WGPUStringView view(const std::string& s) { return {s.data(), s.size()}; }
inline std::string str(WGPUStringView v) {
  if (!v.data) return "";
  return v.length == kWgpuStrlen ? std::string(v.data) : std::string(v.data, v.length);
}

struct WGPUChainedStruct {
  WGPUChainedStruct* next = nullptr;
  WGPUEnum sType = 0;
};

struct WGPUFuture {
  uint64_t id;
};

// Values (webgpu.h / wgpu.h).
constexpr WGPUEnum kSTypeShaderSourceWgsl = 0x00000002;
constexpr WGPUEnum kCallbackModeAllowProcessEvents = 0x00000002;
constexpr WGPUEnum kCallbackModeAllowSpontaneous = 0x00000003;
constexpr WGPUEnum kFeatureLevelCore = 0x00000002;
constexpr WGPUEnum kPowerPreferenceHighPerformance = 0x00000002;
constexpr WGPUEnum kRequestAdapterStatusSuccess = 0x00000001;
constexpr WGPUEnum kRequestDeviceStatusSuccess = 0x00000001;
constexpr WGPUEnum kMapAsyncStatusSuccess = 0x00000001;
constexpr WGPUEnum kStatusSuccess = 0x00000001;
constexpr WGPUEnum kErrorTypeNoError = 0x00000001;
constexpr WGPUEnum kErrorTypeValidation = 0x00000002;
constexpr WGPUEnum kErrorTypeOutOfMemory = 0x00000003;
constexpr WGPUEnum kErrorTypeInternal = 0x00000004;
constexpr WGPUEnum kErrorFilterValidation = 0x00000001;
constexpr WGPUEnum kAdapterTypeDiscreteGpu = 0x00000001;
constexpr WGPUEnum kAdapterTypeIntegratedGpu = 0x00000002;
constexpr WGPUEnum kAdapterTypeCpu = 0x00000003;
constexpr WGPUEnum kBackendTypeVulkan = 0x00000006;
constexpr WGPUEnum kFeatureShaderF16 = 0x0000000B;
// wgpu-native features (wgpu.h WGPUNativeFeature).
constexpr WGPUEnum kNativeFeatureShaderF64 = 0x0003001D;
constexpr WGPUEnum kNativeFeatureShaderInt64 = 0x00030026;
constexpr WGPUFlags kBufferUsageMapRead = 0x1;
constexpr WGPUFlags kBufferUsageCopySrc = 0x4;
constexpr WGPUFlags kBufferUsageCopyDst = 0x8;
constexpr WGPUFlags kBufferUsageStorage = 0x80;
constexpr WGPUFlags kMapModeRead = 0x1;
// wgpu.h WGPUShaderRuntimeChecks: what wgpuDeviceCreateShaderModuleTrusted keeps.
constexpr WGPUFlags kShaderChecksBounds = 0x1;
constexpr WGPUFlags kShaderChecksLoopBounding = 0x2;

using WGPURequestAdapterCallback = void (*)(WGPUEnum status, WGPUAdapter adapter, WGPUStringView message,
                                            void* userdata1, void* userdata2);
using WGPURequestDeviceCallback = void (*)(WGPUEnum status, WGPUDevice device, WGPUStringView message,
                                           void* userdata1, void* userdata2);
using WGPUDeviceLostCallback = void (*)(const WGPUDevice* device, WGPUEnum reason, WGPUStringView message,
                                        void* userdata1, void* userdata2);
using WGPUUncapturedErrorCallback = void (*)(const WGPUDevice* device, WGPUEnum type, WGPUStringView message,
                                             void* userdata1, void* userdata2);
using WGPUBufferMapCallback = void (*)(WGPUEnum status, WGPUStringView message, void* userdata1, void* userdata2);
using WGPUPopErrorScopeCallback = void (*)(WGPUEnum status, WGPUEnum type, WGPUStringView message,
                                           void* userdata1, void* userdata2);

template <typename Callback>
struct WGPUCallbackInfo {  // the shape of every XxxCallbackInfo but the uncaptured-error one
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum mode = kCallbackModeAllowProcessEvents;
  Callback callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};

// wgpu-native's instance options (wgpu.h WGPUInstanceExtras), chained to the descriptor: which
// backends to probe. Every field after `flags` is left zero (wgpu's defaults); `rest` covers
// them (80 bytes in v29) with room to spare.
constexpr WGPUEnum kSTypeInstanceExtras = 0x00030004;
constexpr WGPUFlags kInstanceBackendPrimary = (1 << 0) | (1 << 2) | (1 << 3) | (1 << 5);  // Vulkan, Metal, DX12, WebGPU
constexpr WGPUFlags kInstanceFlagDefault = WGPUFlags{1} << 24;
struct WGPUInstanceExtras {
  WGPUChainedStruct chain{nullptr, kSTypeInstanceExtras};
  WGPUFlags backends = kInstanceBackendPrimary;
  WGPUFlags flags = kInstanceFlagDefault;
  unsigned char rest[128] = {};
};

struct WGPUInstanceDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  size_t requiredFeatureCount = 0;
  const WGPUEnum* requiredFeatures = nullptr;
  const void* requiredLimits = nullptr;
};

struct WGPURequestAdapterOptions {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUEnum featureLevel = kFeatureLevelCore;
  WGPUEnum powerPreference = kPowerPreferenceHighPerformance;
  WGPUBool forceFallbackAdapter = 0;
  WGPUEnum backendType = 0;  // undefined: any
  void* compatibleSurface = nullptr;
};

struct WGPULimits {
  WGPUChainedStruct* nextInChain = nullptr;
  uint32_t maxTextureDimension1D, maxTextureDimension2D, maxTextureDimension3D, maxTextureArrayLayers;
  uint32_t maxBindGroups, maxBindGroupsPlusVertexBuffers, maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout, maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage, maxSamplersPerShaderStage, maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage, maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize, maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment, minStorageBufferOffsetAlignment, maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes, maxVertexBufferArrayStride, maxInterStageShaderVariables;
  uint32_t maxColorAttachments, maxColorAttachmentBytesPerSample, maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup, maxComputeWorkgroupSizeX, maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ, maxComputeWorkgroupsPerDimension, maxImmediateSize;
};

struct WGPUAdapterInfo {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView vendor, architecture, device, description;
  WGPUEnum backendType = 0, adapterType = 0;
  uint32_t vendorID = 0, deviceID = 0, subgroupMinSize = 0, subgroupMaxSize = 0;
};

struct WGPUQueueDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
};

struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUUncapturedErrorCallback callback = nullptr;
  void* userdata1 = nullptr;
  void* userdata2 = nullptr;
};

struct WGPUDeviceDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  size_t requiredFeatureCount = 0;
  const WGPUEnum* requiredFeatures = nullptr;
  const WGPULimits* requiredLimits = nullptr;
  WGPUQueueDescriptor defaultQueue;
  WGPUCallbackInfo<WGPUDeviceLostCallback> deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
};

struct WGPUBufferDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  WGPUFlags usage = 0;
  uint64_t size = 0;
  WGPUBool mappedAtCreation = 0;
};

struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
};

struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
};

struct WGPUComputeState {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUShaderModule module = nullptr;
  WGPUStringView entryPoint;
  size_t constantCount = 0;
  const void* constants = nullptr;
};

struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  void* layout = nullptr;  // null: derived from the shader
  WGPUComputeState compute;
};

struct WGPUBindGroupEntry {
  WGPUChainedStruct* nextInChain = nullptr;
  uint32_t binding = 0;
  WGPUBuffer buffer = nullptr;
  uint64_t offset = 0;
  uint64_t size = 0;
  void* sampler = nullptr;
  void* textureView = nullptr;
};

struct WGPUBindGroupDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  WGPUBindGroupLayout layout = nullptr;
  size_t entryCount = 0;
  const WGPUBindGroupEntry* entries = nullptr;
};

struct WGPUComputePassDescriptor {
  WGPUChainedStruct* nextInChain = nullptr;
  WGPUStringView label;
  const void* timestampWrites = nullptr;
};

// Entry points, resolved with dlsym.
struct WgpuApi {
#define RLX_WGPU_FN(ret, name, ...) ret (*name)(__VA_ARGS__) = nullptr;
#include "wgpu_functions.inc"
#undef RLX_WGPU_FN
  uint32_t version = 0;  // wgpuGetVersion(): major << 24 | minor << 16 | patch << 8 | build
  std::string path;      // the library opened
};

// wgpu-native, opened once per process and never unloaded, or nullptr with `why` set. Looks at
// RLX_WGPU_NATIVE (a path) first, then the names the library is installed under.
const WgpuApi* wgpu_loader(std::string* why);

// "29.0.1.1"
std::string wgpu_version_name(uint32_t version);

}  // namespace rlx::webgpu
