#include "webgpu_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "rlx/core/error.h"
#include "wgpu_api.h"
#include "wgsl_library.h"

namespace rlx::webgpu {

namespace {

constexpr uint32_t kGroupSize = 64;  // the dialect's @workgroup_size

uint64_t round4(uint64_t n) { return (n + 3) & ~uint64_t{3}; }

const char* kind_name(WGPUEnum t) {
  switch (t) {
    case kAdapterTypeDiscreteGpu: return "discrete gpu";
    case kAdapterTypeIntegratedGpu: return "integrated gpu";
    case kAdapterTypeCpu: return "cpu";
    default: return "unknown kind";
  }
}

const char* backend_name(WGPUEnum b) {
  switch (b) {
    case 2: return "WebGPU";
    case 3: return "D3D11";
    case 4: return "D3D12";
    case 5: return "Metal";
    case kBackendTypeVulkan: return "Vulkan";
    case 7: return "OpenGL";
    case 8: return "OpenGL ES";
    default: return "an unknown backend";
  }
}

const char* error_type_name(WGPUEnum t) {
  switch (t) {
    case kErrorTypeValidation: return "validation error";
    case kErrorTypeOutOfMemory: return "out of memory";
    case kErrorTypeInternal: return "internal error";
    default: return "error";
  }
}

// A device buffer; `id` is unique for the process, so cached bind groups never confuse a
// released buffer with a new one at the same address.
struct Buf {
  WGPUBuffer buffer = nullptr;
  uint64_t size = 0;
  uint64_t id = 0;
};
Buf* buf_of(const gpu_host::DeviceBuffer& b) { return static_cast<Buf*>(b.handle); }

}  // namespace

std::string WebGpuInfo::describe() const {
  return fmt::format("{} (WebGPU on {}, {}, {})", name, backend, kind, library);
}

// The instance, adapter, device and queue, and the recording state every adapter shares.
class WebGpuContext {
 public:
  WebGpuContext(const WgpuApi& api, std::string* why) : w_(api) { ok_ = init(why); }
  ~WebGpuContext() = delete;  // never destroyed: drivers must not be torn down at exit
  bool ok() const { return ok_; }
  const WgpuApi& w() const { return w_; }
  const WebGpuInfo& info() const { return info_; }
  WGPUDevice device() const { return device_; }
  std::mutex& mutex() { return mutex_; }
  uint64_t next_id() { return ++ids_; }

  // Throws the errors the device reported since the last check, naming what was being done.
  void check(const std::string& doing, ErrorKind kind = ErrorKind::kUser) {
    std::string e;
    {
      std::lock_guard<std::mutex> lock(error_mutex_);
      e.swap(errors_);
    }
    if (!e.empty()) throw Error(kind, fmt::format("webgpu: {} failed: {}", doing, e));
  }

  // --- recording

  WGPUComputePassEncoder pass() {
    if (!pass_) {
      pass_ = w_.wgpuCommandEncoderBeginComputePass(encoder(), nullptr);
      if (!pass_) check("beginning a compute pass");
    }
    return pass_;
  }
  WGPUCommandEncoder encoder_outside_pass() {
    end_pass();
    return encoder();
  }
  // Submits what was recorded (if anything).
  void submit() {
    if (!encoder_) return;
    end_pass();
    WGPUCommandBuffer cb = w_.wgpuCommandEncoderFinish(encoder_, nullptr);
    w_.wgpuCommandEncoderRelease(encoder_);
    encoder_ = nullptr;
    if (!cb) check("finishing the command encoder");
    w_.wgpuQueueSubmit(queue_, 1, &cb);
    w_.wgpuCommandBufferRelease(cb);
    check("submitting commands");
  }
  void wait_idle() {
    submit();
    w_.wgpuDevicePoll(device_, 1, nullptr);
    check("running the submitted commands");
  }
  WGPUQueue queue() const { return queue_; }

  // A mappable buffer of at least `bytes` for downloads.
  WGPUBuffer staging(uint64_t bytes) {
    if (staging_size_ < bytes) {
      if (staging_) {
        w_.wgpuBufferDestroy(staging_);
        w_.wgpuBufferRelease(staging_);
      }
      WGPUBufferDescriptor d;
      d.usage = kBufferUsageMapRead | kBufferUsageCopyDst;
      d.size = std::max<uint64_t>(round4(bytes), 1 << 16);
      staging_ = w_.wgpuDeviceCreateBuffer(device_, &d);
      check(fmt::format("allocating a {}-byte staging buffer", d.size));
      staging_size_ = d.size;
    }
    return staging_;
  }

  // Runs the device until `done` is set by a callback.
  void poll_until(const bool& done, const std::string& doing) {
    for (int i = 0; !done && i < 100000; ++i) {
      w_.wgpuDevicePoll(device_, 1, nullptr);
      w_.wgpuInstanceProcessEvents(instance_);
    }
    if (!done) throw Error(ErrorKind::kUser, fmt::format("webgpu: {} never completed", doing));
  }

 private:
  const WgpuApi& w_;
  bool ok_ = false;
  WebGpuInfo info_;
  WGPUInstance instance_ = nullptr;
  WGPUAdapter adapter_ = nullptr;
  WGPUDevice device_ = nullptr;
  WGPUQueue queue_ = nullptr;
  WGPUCommandEncoder encoder_ = nullptr;
  WGPUComputePassEncoder pass_ = nullptr;
  WGPUBuffer staging_ = nullptr;
  uint64_t staging_size_ = 0;
  uint64_t ids_ = 0;
  std::mutex mutex_;
  std::mutex error_mutex_;
  std::string errors_;

  WGPUCommandEncoder encoder() {
    if (!encoder_) {
      encoder_ = w_.wgpuDeviceCreateCommandEncoder(device_, nullptr);
      if (!encoder_) check("creating a command encoder");
    }
    return encoder_;
  }
  void end_pass() {
    if (!pass_) return;
    w_.wgpuComputePassEncoderEnd(pass_);
    w_.wgpuComputePassEncoderRelease(pass_);
    pass_ = nullptr;
  }

  static void on_error(const WGPUDevice*, WGPUEnum type, WGPUStringView message, void* self, void*) {
    auto* c = static_cast<WebGpuContext*>(self);
    std::lock_guard<std::mutex> lock(c->error_mutex_);
    c->errors_ += fmt::format("{}{}: {}", c->errors_.empty() ? "" : "; ", error_type_name(type), str(message));
  }
  static void on_lost(const WGPUDevice*, WGPUEnum reason, WGPUStringView message, void* self, void*) {
    auto* c = static_cast<WebGpuContext*>(self);
    if (!c->device_) return;  // creation failed: reported by the request's callback
    std::lock_guard<std::mutex> lock(c->error_mutex_);
    c->errors_ += fmt::format("{}the device was lost (reason {}): {}", c->errors_.empty() ? "" : "; ", reason,
                              str(message));
  }

  bool init(std::string* why) {
    // The primary backends only: probing OpenGL (EGL) finds nothing a compute target wants and
    // prints warnings on machines without a display server.
    WGPUInstanceExtras extras;
    WGPUInstanceDescriptor idesc;
    idesc.nextInChain = &extras.chain;
    instance_ = w_.wgpuCreateInstance(&idesc);
    if (!instance_) return fail(why, "wgpuCreateInstance returned no instance");
    struct AdapterResult {
      bool done = false;
      WGPUEnum status = 0;
      WGPUAdapter adapter = nullptr;
      std::string message;
    } ar;
    WGPURequestAdapterOptions options;
    WGPUCallbackInfo<WGPURequestAdapterCallback> acb;
    acb.callback = [](WGPUEnum status, WGPUAdapter adapter, WGPUStringView message, void* r, void*) {
      auto* res = static_cast<AdapterResult*>(r);
      res->done = true;
      res->status = status;
      res->adapter = adapter;
      res->message = str(message);
    };
    acb.userdata1 = &ar;
    w_.wgpuInstanceRequestAdapter(instance_, &options, acb);
    for (int i = 0; !ar.done && i < 1000; ++i) w_.wgpuInstanceProcessEvents(instance_);
    if (!ar.done || ar.status != kRequestAdapterStatusSuccess || !ar.adapter)
      return fail(why, fmt::format("wgpu-native found no WebGPU adapter ({}); install a Vulkan driver "
                                   "(mesa-vulkan-drivers has lavapipe, a CPU driver)",
                                   ar.message.empty() ? "no message" : ar.message));
    adapter_ = ar.adapter;

    WGPUAdapterInfo ai;
    if (w_.wgpuAdapterGetInfo(adapter_, &ai) == kStatusSuccess) {
      info_.name = str(ai.device);
      if (info_.name.empty()) info_.name = str(ai.description);
      info_.backend = backend_name(ai.backendType);
      info_.kind = kind_name(ai.adapterType);
      w_.wgpuAdapterInfoFreeMembers(ai);
    }
    info_.library = fmt::format("wgpu-native {}", wgpu_version_name(w_.version));
    WGPULimits limits{};
    if (w_.wgpuAdapterGetLimits(adapter_, &limits) != kStatusSuccess)
      return fail(why, "wgpuAdapterGetLimits failed");
    info_.max_groups_per_dim = limits.maxComputeWorkgroupsPerDimension;
    info_.max_binding_bytes = limits.maxStorageBufferBindingSize;
    info_.max_storage_buffers = limits.maxStorageBuffersPerShaderStage;
    std::vector<WGPUEnum> features;
    info_.int64 = w_.wgpuAdapterHasFeature(adapter_, kNativeFeatureShaderInt64) != 0;
    info_.f64 = w_.wgpuAdapterHasFeature(adapter_, kNativeFeatureShaderF64) != 0;
    if (info_.int64) features.push_back(kNativeFeatureShaderInt64);
    if (info_.f64) features.push_back(kNativeFeatureShaderF64);

    struct DeviceResult {
      bool done = false;
      WGPUEnum status = 0;
      WGPUDevice device = nullptr;
      std::string message;
    } dr;
    WGPUDeviceDescriptor ddesc;
    ddesc.requiredFeatureCount = features.size();
    ddesc.requiredFeatures = features.data();
    ddesc.requiredLimits = &limits;  // everything the adapter offers (storage buffers per stage, sizes)
    ddesc.deviceLostCallbackInfo.mode = kCallbackModeAllowSpontaneous;
    ddesc.deviceLostCallbackInfo.callback = &WebGpuContext::on_lost;
    ddesc.deviceLostCallbackInfo.userdata1 = this;
    ddesc.uncapturedErrorCallbackInfo.callback = &WebGpuContext::on_error;
    ddesc.uncapturedErrorCallbackInfo.userdata1 = this;
    WGPUCallbackInfo<WGPURequestDeviceCallback> dcb;
    dcb.callback = [](WGPUEnum status, WGPUDevice device, WGPUStringView message, void* r, void*) {
      auto* res = static_cast<DeviceResult*>(r);
      res->done = true;
      res->status = status;
      res->device = device;
      res->message = str(message);
    };
    dcb.userdata1 = &dr;
    w_.wgpuAdapterRequestDevice(adapter_, &ddesc, dcb);
    for (int i = 0; !dr.done && i < 1000; ++i) w_.wgpuInstanceProcessEvents(instance_);
    if (!dr.done || dr.status != kRequestDeviceStatusSuccess || !dr.device)
      return fail(why, fmt::format("{} refused to create a device: {}", info_.describe(), dr.message));
    device_ = dr.device;
    queue_ = w_.wgpuDeviceGetQueue(device_);
    return true;
  }

  static bool fail(std::string* why, const std::string& what) {
    if (why) *why = what;
    return false;
  }
};

namespace {

// One kernel's pipeline, and the bind groups it was launched with (by buffer ids).
struct Kernel {
  WGPUShaderModule shader = nullptr;
  WGPUComputePipeline pipeline = nullptr;
  WGPUBindGroupLayout layout = nullptr;
  std::map<std::vector<uint64_t>, WGPUBindGroup> groups;
};

class WebGpuModule final : public gpu_host::Module {
 public:
  WebGpuModule(std::shared_ptr<WebGpuContext> c) : c_(std::move(c)) {}
  ~WebGpuModule() override {
    const WgpuApi& w = c_->w();
    for (auto& [name, k] : kernels) {
      for (auto& [ids, g] : k.groups) w.wgpuBindGroupRelease(g);
      if (k.layout) w.wgpuBindGroupLayoutRelease(k.layout);
      if (k.pipeline) w.wgpuComputePipelineRelease(k.pipeline);
      if (k.shader) w.wgpuShaderModuleRelease(k.shader);
    }
  }
  std::map<std::string, Kernel> kernels;

 private:
  std::shared_ptr<WebGpuContext> c_;
};

// The numbered source, for compile errors.
std::string numbered(const std::string& source) {
  std::string out;
  int n = 1;
  size_t at = 0;
  while (at < source.size()) {
    size_t end = source.find('\n', at);
    if (end == std::string::npos) end = source.size();
    out += fmt::format("{:4} | {}\n", n++, source.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::shared_ptr<WebGpuDevice> WebGpuDevice::shared(std::string* why) {
  static std::once_flag once;
  static std::shared_ptr<WebGpuContext> context;
  static std::string error;
  // A context that failed to come up is kept too, so that it stays reachable: dropped,
  // LeakSanitizer reported it as a leak at every exit of a process without an adapter. Volatile:
  // the compiler may drop a static that is only written, and the pointer with it.
  [[maybe_unused]] static WebGpuContext* volatile unusable = nullptr;
  std::call_once(once, [] {
    const WgpuApi* api = wgpu_loader(&error);
    if (!api) return;
    auto* c = new WebGpuContext(*api, &error);  // never destroyed (see ~WebGpuContext)
    if (c->ok())
      context = std::shared_ptr<WebGpuContext>(c, [](WebGpuContext*) {});
    else
      unusable = c;
  });
  if (!context) {
    if (why) *why = error;
    return nullptr;
  }
  static auto device = std::make_shared<WebGpuDevice>(context);
  return device;
}

const WebGpuInfo* WebGpuDevice::probe(std::string* why) {
  auto d = shared(why);
  return d ? &d->info() : nullptr;
}

WebGpuDevice::WebGpuDevice(std::shared_ptr<WebGpuContext> context) : context_(std::move(context)) {}
WebGpuDevice::~WebGpuDevice() = default;

const WebGpuInfo& WebGpuDevice::info() const { return context_->info(); }
const gpu_host::KernelLibrary& WebGpuDevice::library() const { return wgsl_library(); }

gpu_host::DeviceBuffer WebGpuDevice::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(context_->mutex());
  const WgpuApi& w = context_->w();
  if (bytes > context_->info().max_binding_bytes)
    throw Error(ErrorKind::kUser,
                fmt::format("webgpu: a {}-byte buffer exceeds the {} bytes {} can bind as one storage buffer", bytes,
                            context_->info().max_binding_bytes, context_->info().name));
  WGPUBufferDescriptor d;
  d.usage = kBufferUsageStorage | kBufferUsageCopySrc | kBufferUsageCopyDst;
  d.size = round4(bytes);
  WGPUBuffer b = w.wgpuDeviceCreateBuffer(context_->device(), &d);
  context_->check(fmt::format("allocating {} bytes", bytes));
  if (!b) throw Error(ErrorKind::kUser, fmt::format("webgpu: allocating {} bytes returned no buffer", bytes));
  auto* buf = new Buf{b, d.size, context_->next_id()};
  return gpu_host::DeviceBuffer{buf, bytes};
}

void WebGpuDevice::release(gpu_host::DeviceBuffer& buffer) noexcept {
  Buf* b = buf_of(buffer);
  if (!b) return;
  std::lock_guard<std::mutex> lock(context_->mutex());
  // Commands recorded but not submitted may still use it.
  try {
    context_->submit();
  } catch (const Error&) {
  }
  context_->w().wgpuBufferRelease(b->buffer);  // freed when the queue is done with it
  delete b;
  buffer.handle = nullptr;
}

void WebGpuDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(context_->mutex());
  // A queue write lands before the commands of the next submit: submit what was recorded first.
  context_->submit();
  Buf* b = buf_of(dst);
  if (bytes % 4 == 0) {
    context_->w().wgpuQueueWriteBuffer(context_->queue(), b->buffer, 0, src, bytes);
  } else {
    std::vector<uint8_t> padded(round4(bytes), 0);
    std::memcpy(padded.data(), src, bytes);
    context_->w().wgpuQueueWriteBuffer(context_->queue(), b->buffer, 0, padded.data(), padded.size());
  }
  context_->check(fmt::format("writing {} bytes to a buffer", bytes));
}

void WebGpuDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(context_->mutex());
  const WgpuApi& w = context_->w();
  uint64_t n = round4(bytes);
  WGPUBuffer staging = context_->staging(n);
  w.wgpuCommandEncoderCopyBufferToBuffer(context_->encoder_outside_pass(), buf_of(src)->buffer, 0, staging, 0, n);
  context_->submit();
  struct MapResult {
    bool done = false;
    WGPUEnum status = 0;
    std::string message;
  } mr;
  WGPUCallbackInfo<WGPUBufferMapCallback> cb;
  cb.callback = [](WGPUEnum status, WGPUStringView message, void* r, void*) {
    auto* res = static_cast<MapResult*>(r);
    res->done = true;
    res->status = status;
    res->message = str(message);
  };
  cb.userdata1 = &mr;
  w.wgpuBufferMapAsync(staging, kMapModeRead, 0, n, cb);
  context_->poll_until(mr.done, "reading a buffer back");
  context_->check("running the kernels");
  if (mr.status != kMapAsyncStatusSuccess)
    throw Error(ErrorKind::kUser, fmt::format("webgpu: mapping a buffer for reading failed: {}", mr.message));
  const void* p = w.wgpuBufferGetConstMappedRange(staging, 0, n);
  if (!p) {
    w.wgpuBufferUnmap(staging);
    throw Error(ErrorKind::kUser, "webgpu: a mapped buffer has no memory range");
  }
  std::memcpy(dst, p, bytes);
  w.wgpuBufferUnmap(staging);
}

void WebGpuDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard<std::mutex> lock(context_->mutex());
  context_->w().wgpuCommandEncoderCopyBufferToBuffer(context_->encoder_outside_pass(), buf_of(src)->buffer, 0,
                                                     buf_of(dst)->buffer, 0, round4(bytes));
}

// Every access stays bounds-checked (a wrong index in a generated kernel reads or writes inside its
// buffer, never past it). What rlx drops is wgpu's forced loop bounding, a counter naga adds to
// every loop so that a shader cannot hang a driver: rlx's kernels are counted loops with bounds
// fixed at render time. On an H200 the counters made the attention kernel 4.7x slower and a
// MiniLM batch of 32 1.65x slower (14.1 against 8.5 ms), and tripled compile times (docs/
// decisions.md). RLX_WEBGPU_SHADER_CHECKS=all restores the bounding, to measure it or rule it out.
namespace {
WGPUFlags shader_checks() {
  const char* v = std::getenv("RLX_WEBGPU_SHADER_CHECKS");
  if (v && std::string(v) == "all") return kShaderChecksBounds | kShaderChecksLoopBounding;
  return kShaderChecksBounds;
}
}  // namespace

std::unique_ptr<gpu_host::Module> WebGpuDevice::build(const std::string& source) {
  std::lock_guard<std::mutex> lock(context_->mutex());
  const WgpuApi& w = context_->w();
  auto module = std::make_unique<WebGpuModule>(context_);
  context_->check("earlier work");
  for (auto& [symbol, text] : sdk::shader_sections(complete_wgsl_module(source))) {
    Kernel& k = module->kernels[symbol];
    WGPUShaderSourceWGSL wgsl;
    wgsl.chain.sType = kSTypeShaderSourceWgsl;
    wgsl.code = view(text);
    WGPUShaderModuleDescriptor sd;
    sd.nextInChain = &wgsl.chain;
    sd.label = view(symbol);
    k.shader = w.wgpuDeviceCreateShaderModuleTrusted(context_->device(), &sd, shader_checks());
    try {
      context_->check(fmt::format("compiling the WGSL of kernel {}", symbol), ErrorKind::kCompile);
    } catch (const Error& e) {
      throw Error(ErrorKind::kCompile, fmt::format("{}\n{}", e.what(), numbered(text)));
    }
    WGPUComputePipelineDescriptor pd;
    pd.label = view(symbol);
    pd.compute.module = k.shader;
    pd.compute.entryPoint = view(symbol);
    k.pipeline = w.wgpuDeviceCreateComputePipeline(context_->device(), &pd);
    context_->check(fmt::format("creating the pipeline of kernel {}", symbol), ErrorKind::kCompile);
    k.layout = w.wgpuComputePipelineGetBindGroupLayout(k.pipeline, 0);
    context_->check(fmt::format("getting the bind group layout of kernel {}", symbol));
  }
  return module;
}

void WebGpuDevice::launch(gpu_host::Module& module, const std::string& symbol,
                          const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  std::lock_guard<std::mutex> lock(context_->mutex());
  const WgpuApi& w = context_->w();
  auto& m = static_cast<WebGpuModule&>(module);
  auto it = m.kernels.find(symbol);
  if (it == m.kernels.end())
    throw_internal_error(fmt::format("webgpu: the module has no kernel {}", symbol));
  Kernel& k = it->second;
  std::vector<uint64_t> ids;
  for (const auto* a : args) ids.push_back(buf_of(*a)->id);
  WGPUBindGroup& group = k.groups[ids];
  if (!group) {
    std::vector<WGPUBindGroupEntry> entries(args.size());
    for (size_t j = 0; j < args.size(); ++j) {
      entries[j].binding = static_cast<uint32_t>(j);
      entries[j].buffer = buf_of(*args[j])->buffer;
      entries[j].size = buf_of(*args[j])->size;
    }
    WGPUBindGroupDescriptor d;
    d.layout = k.layout;
    d.entryCount = entries.size();
    d.entries = entries.data();
    group = w.wgpuDeviceCreateBindGroup(context_->device(), &d);
    context_->check(fmt::format("binding the buffers of kernel {}", symbol));
  }
  const uint64_t groups = (static_cast<uint64_t>(work_items) + kGroupSize - 1) / kGroupSize;
  const uint64_t max = context_->info().max_groups_per_dim;
  const uint64_t x = std::min(groups, max), y = (groups + x - 1) / x;
  if (y > max)
    throw Error(ErrorKind::kUser, fmt::format("webgpu: kernel {} needs {} work-items, more than a {}x{} grid of "
                                                 "{}-wide groups holds",
                                                 symbol, work_items, max, max, kGroupSize));
  WGPUComputePassEncoder pass = context_->pass();
  w.wgpuComputePassEncoderSetPipeline(pass, k.pipeline);
  w.wgpuComputePassEncoderSetBindGroup(pass, 0, group, 0, nullptr);
  w.wgpuComputePassEncoderDispatchWorkgroups(pass, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1);
}

void WebGpuDevice::finish() {
  std::lock_guard<std::mutex> lock(context_->mutex());
  context_->wait_idle();
}

bool portable_only() {
  const char* v = std::getenv("RLX_WEBGPU_PORTABLE");
  return v && *v && std::string(v) != "0";
}

// Portable programs fit the limits WebGPU guarantees everywhere (the specification's defaults:
// 8 storage buffers per stage, 128 MiB per binding): an ES module's kernels then bind in any
// browser, not only on an adapter that offers more.
DeviceLimits WebGpuDevice::limits() const {
  DeviceLimits l;
  l.max_buffer_bytes = info().max_binding_bytes;
  l.max_buffers_per_kernel = info().max_storage_buffers;
  if (portable_only()) {
    l.max_buffer_bytes = std::min<uint64_t>(l.max_buffer_bytes, uint64_t{128} << 20);
    l.max_buffers_per_kernel = std::min<uint32_t>(l.max_buffers_per_kernel, 8);
  }
  return l;
}

}  // namespace rlx::webgpu
