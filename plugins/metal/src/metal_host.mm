// The metal target's host on Apple's Metal (metal_host.h says what it does). Objective-C++, built
// only on Apple platforms; on Linux a test parses it against declarations of the Metal API
// (plugins/metal/tests/test_metal_host_syntax.cpp), which is all that can be checked there.
//
// Memory management is ARC, everywhere in this file: the host throws rlx::Error from the middle
// of functions that hold Metal objects, and under ARC (whose Objective-C++ cleanups run during C++
// unwinding) a throw releases them, where manual retain/release would need a release on every
// exit path. Metal objects held by C++ classes are strong members; a buffer crosses into the
// SDK's `void*` handle with a retaining bridge in allocate() and comes back with a transferring
// one in release().
#include "metal_host.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "msl_library.h"
#include "rlx/core/error.h"

// After every C++ header, so no macro of Apple's headers reaches rlx's or the standard library's.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#if !__has_feature(objc_arc)
#error "metal_host.mm manages Metal objects with ARC: compile it with -fobjc-arc"
#endif

namespace rlx::metal {

namespace {

// Every kernel is dispatched in groups of 64 threads: the cooperative kernels (tiled products,
// norms, attention) are written for exactly 64 (render.h), as the OpenCL host's
// reqd_work_group_size enforces, and 64 is a multiple of every Apple GPU's SIMD width.
constexpr NSUInteger kGroupSize = 64;
// The SIMD width the MSL dialect's kernels are written for (sdk::Dialect::simd_width).
constexpr NSUInteger kSimdWidth = 32;
// Entries of a compute function's buffer argument table (Metal feature set tables).
constexpr uint32_t kMaxBufferArguments = 31;
// Launches encoded into one command buffer before it is committed, so the GPU starts on a long
// program while the host still encodes the rest.
constexpr int kLaunchesPerCommandBuffer = 64;
// Compiler logs longer than this are cut, as the OpenCL host cuts its build logs.
constexpr size_t kMaxLog = 4000;

std::string utf8(NSString* s) {
  return s ? std::string([s UTF8String]) : std::string();
}

std::string describe(NSError* error) {
  if (!error) return "(no log)";
  std::string log = utf8(error.localizedDescription);
  if (log.size() > kMaxLog) log = log.substr(0, kMaxLog) + "\n...";
  return log;
}

id<MTLBuffer> buffer_of(const gpu_host::DeviceBuffer& b) {
  return (__bridge id<MTLBuffer>)b.handle;
}

// macOS blits need sizes in multiples of 4 bytes: buffers are allocated rounded up, so a copy or
// fill of the rounded size stays inside both buffers.
size_t padded(size_t bytes) {
  return (bytes + 3) / 4 * 4;
}

// Runs `work` inside an autorelease pool, which the host's callers (plain C++ threads) do not
// have: the command buffers and encoders Metal returns autoreleased are freed at the end of each
// call. An exception is carried out of the pool and rethrown after it is drained, so no pool is
// left pushed.
template <typename Work>
void in_pool(Work&& work) {
  std::exception_ptr failure;
  @autoreleasepool {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

struct Probe {
  id<MTLDevice> device;
  MetalDeviceInfo info;
  std::string why;
};

// Asked once and never destroyed: the driver must not be torn down by static destructors while
// another library may still call into Metal at exit (the OpenCL host does the same).
const Probe& probe() {
  static const Probe* found = [] {
    auto* p = new Probe;
    @autoreleasepool {
      p->device = MTLCreateSystemDefaultDevice();
      if (!p->device) {
        p->why = "no Metal device (MTLCreateSystemDefaultDevice returned none)";
      } else {
        p->info.name = utf8(p->device.name);
        p->info.unified_memory = p->device.hasUnifiedMemory;
        p->info.max_buffer_bytes = p->device.maxBufferLength;
        p->info.max_threads_per_group =
            static_cast<uint32_t>(p->device.maxThreadsPerThreadgroup.width);
        p->info.threadgroup_memory_bytes = p->device.maxThreadgroupMemoryLength;
      }
    }
    return p;
  }();
  return *found;
}

// One MTLLibrary and a compute pipeline for each of its kernels.
class MetalModule final : public gpu_host::Module {
 public:
  id<MTLLibrary> library;
  std::map<std::string, id<MTLComputePipelineState>, std::less<>> pipelines;
};

class MetalDevice final : public gpu_host::DeviceApi {
 public:
  MetalDevice(id<MTLDevice> device, const MetalDeviceInfo& info) : device_(device), info_(info) {
    in_pool([&] {
      queue_ = [device_ newCommandQueue];
      if (!queue_)
        throw Error(ErrorKind::kDevice, fmt::format("metal: {} gave no command queue", info_.name));
      options_ = [[MTLCompileOptions alloc] init];
      // bfloat needs MSL 3.1; older systems compile at their newest version, and a module with
      // bf16 then fails to build with the compiler's message.
      if (@available(macOS 14.0, iOS 17.0, *)) options_.languageVersion = MTLLanguageVersion3_1;
      // Fast math off: NaN propagation and the no-contraction rule need it (the kernels call
      // metal::precise:: functions already, which fast math cannot loosen).
      if (@available(macOS 15.0, iOS 18.0, *)) {
        options_.mathMode = MTLMathModeSafe;
        options_.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;
      } else {
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
        options_.fastMathEnabled = NO;
#pragma clang diagnostic pop
      }
    });
  }

  std::string target_name() const override {
    return "metal";
  }
  const gpu_host::KernelLibrary& library() const override {
    return msl_library();
  }

  gpu_host::DeviceBuffer allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    // Shared storage: the host reads and writes `contents` directly, with no staging copies.
    id<MTLBuffer> b = [device_ newBufferWithLength:padded(bytes)
                                           options:MTLResourceStorageModeShared];
    if (!b)
      throw Error(ErrorKind::kDevice,
                  fmt::format("metal: cannot allocate {} bytes on {} (at most {} per buffer)",
                              bytes, info_.name, info_.max_buffer_bytes));
    use_.bytes += b.length;
    use_.peak_bytes = std::max(use_.peak_bytes, use_.bytes);
    return {(__bridge_retained void*)b, bytes};
  }

  // Command buffers retain the buffers they use, so releasing one that queued work still reads
  // is safe: Metal frees it when that work completes.
  void release(gpu_host::DeviceBuffer& buffer) noexcept override {
    if (!buffer.handle) return;
    std::lock_guard<std::mutex> lock(mutex_);
    id<MTLBuffer> b = (__bridge_transfer id<MTLBuffer>)buffer.handle;
    use_.bytes -= std::min<uint64_t>(use_.bytes, b.length);
    buffer = {};
  }

  // The host writes shared memory directly, so the work queued before must be done first (it may
  // still read the old contents); transfers are then ordered with launches as the SDK requires.
  void upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    in_pool([&] { wait(); });
    std::memcpy([buffer_of(dst) contents], src, bytes);
  }

  void download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    in_pool([&] { wait(); });
    std::memcpy(dst, [buffer_of(src) contents], bytes);
  }

  void copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst,
            size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    in_pool([&] {
      id<MTLBuffer> s = buffer_of(src), d = buffer_of(dst);
      const NSUInteger n = std::min<NSUInteger>({padded(bytes), s.length, d.length});
      [blit_encoder() copyFromBuffer:s sourceOffset:0 toBuffer:d destinationOffset:0 size:n];
    });
  }

  // A blit fill, ordered with launches and without waiting: the executor zeroes the index-check
  // status buffer before every run, which then costs no round trip to the host.
  void zero(const gpu_host::DeviceBuffer& buffer, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    in_pool([&] {
      id<MTLBuffer> b = buffer_of(buffer);
      [blit_encoder() fillBuffer:b
                           range:NSMakeRange(0, std::min<NSUInteger>(padded(bytes), b.length))
                           value:0];
    });
  }

  // The library and every kernel's pipeline, so an error surfaces now with the compiler's log.
  std::unique_ptr<gpu_host::Module> build(const std::string& source) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto module = std::make_unique<MetalModule>();
    in_pool([&] {
      NSString* text = [[NSString alloc] initWithBytes:source.data()
                                                length:source.size()
                                              encoding:NSUTF8StringEncoding];
      NSError* error = nil;
      module->library = [device_ newLibraryWithSource:text options:options_ error: &error];
      if (!module->library)
        throw Error(
            ErrorKind::kCompile,
            fmt::format(
                "metal: {} could not compile the generated MSL; `rlx compile --target metal -o "
                "DIR` writes the source. Compiler log:\n{}",
                info_.name, describe(error)));
      for (NSString* name in module->library.functionNames) {
        const std::string symbol = utf8(name);
        id<MTLFunction> function = [module->library newFunctionWithName:name];
        error = nil;
        id<MTLComputePipelineState> pipeline =
            function ? [device_ newComputePipelineStateWithFunction:function error:&error] : nil;
        if (!pipeline)
          throw Error(ErrorKind::kCompile,
                      fmt::format("metal: {} could not make a compute pipeline of kernel {}: {}",
                                  info_.name, symbol, describe(error)));
        if (pipeline.maxTotalThreadsPerThreadgroup < kGroupSize)
          throw Error(
              ErrorKind::kUnsupported,
              fmt::format(
                  "metal: kernel {} needs threadgroups of {} threads, but {} allows at most {} for "
                  "it; this device cannot run rlx's cooperative kernels",
                  symbol, kGroupSize, info_.name, pipeline.maxTotalThreadsPerThreadgroup));
        // The decode attention gives each query row one SIMD group of 32 lanes (two to a
        // threadgroup), as Apple GPUs run them, and a loop reduction each output (its launch
        // counts 32 work-items an output); another width would leave keys or elements unread.
        if (pipeline.threadExecutionWidth != kSimdWidth)
          throw Error(ErrorKind::kUnsupported,
                      fmt::format("metal: {} runs kernel {} in SIMD groups of {} threads, but "
                                  "rlx's MSL reduces in SIMD groups of {}",
                                  info_.name, symbol, pipeline.threadExecutionWidth, kSimdWidth));
        module->pipelines.emplace(symbol, pipeline);
      }
    });
    return module;
  }

  void launch(gpu_host::Module& m, const std::string& symbol,
              const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& module = static_cast<MetalModule&>(m);
    auto it = module.pipelines.find(symbol);
    if (it == module.pipelines.end())
      throw Error(ErrorKind::kInternal, fmt::format("metal: the module has no kernel {}", symbol));
    if (args.size() > kMaxBufferArguments)
      throw Error(ErrorKind::kUnsupported,
                  fmt::format("metal: kernel {} binds {} buffers; Metal binds at most {}", symbol,
                              args.size(), kMaxBufferArguments));
    // Kernels return at once for threads past the domain (render.h), so the grid is whole
    // groups; the thread position is a 32-bit uint in the MSL, which bounds the grid.
    const uint64_t groups = (static_cast<uint64_t>(work_items) + kGroupSize - 1) / kGroupSize;
    if (groups * kGroupSize > (uint64_t{1} << 32))
      throw Error(
          ErrorKind::kUnsupported,
          fmt::format(
              "metal: kernel {} needs {} threads, more than its 32-bit thread position reaches",
              symbol, work_items));
    in_pool([&] {
      id<MTLComputeCommandEncoder> encoder = compute_encoder();
      [encoder setComputePipelineState:it->second];
      for (size_t j = 0; j < args.size(); ++j)
        [encoder setBuffer:buffer_of(*args[j]) offset:0 atIndex:j];
      [encoder dispatchThreadgroups:MTLSizeMake(groups, 1, 1)
              threadsPerThreadgroup:MTLSizeMake(kGroupSize, 1, 1)];
      if (++launches_open_ >= kLaunchesPerCommandBuffer) commit();
    });
  }

  void finish() override {
    std::lock_guard<std::mutex> lock(mutex_);
    in_pool([&] { wait(); });
  }

  DeviceLimits limits() const override {
    DeviceLimits l;
    l.max_buffer_bytes = info_.max_buffer_bytes;
    l.max_buffers_per_kernel = kMaxBufferArguments;
    l.max_workgroup_size = info_.max_threads_per_group;
    l.shared_memory_bytes = info_.threadgroup_memory_bytes;
    return l;
  }

  std::optional<gpu_host::DeviceMemoryUse> memory_use() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return use_;
  }

 private:
  id<MTLDevice> device_;
  const MetalDeviceInfo& info_;
  id<MTLCommandQueue> queue_;
  MTLCompileOptions* options_;
  // The command buffer being encoded and its open encoder (at most one of the two), nil when none.
  // One queue runs its command buffers in commit order, and buffers are hazard-tracked, so every
  // launch, copy and fill sees the writes of those queued before it.
  id<MTLCommandBuffer> open_;
  id<MTLComputeCommandEncoder> compute_;
  id<MTLBlitCommandEncoder> blit_;
  int launches_open_ = 0;
  std::vector<id<MTLCommandBuffer>> committed_;  // committed, not yet waited for
  gpu_host::DeviceMemoryUse use_;
  mutable std::mutex mutex_;

  id<MTLCommandBuffer> command_buffer() {
    if (!open_) {
      open_ = [queue_ commandBuffer];
      if (!open_)
        throw Error(ErrorKind::kDevice,
                    fmt::format("metal: {} gave no command buffer", info_.name));
    }
    return open_;
  }

  void end_encoder() {
    if (compute_) [compute_ endEncoding];
    if (blit_) [blit_ endEncoding];
    compute_ = nil;
    blit_ = nil;
  }

  id<MTLComputeCommandEncoder> compute_encoder() {
    if (!compute_) {
      id<MTLCommandBuffer> buffer = command_buffer();
      end_encoder();
      compute_ = [buffer computeCommandEncoder];
      if (!compute_)
        throw Error(ErrorKind::kDevice,
                    fmt::format("metal: {} gave no compute encoder", info_.name));
    }
    return compute_;
  }

  id<MTLBlitCommandEncoder> blit_encoder() {
    if (!blit_) {
      id<MTLCommandBuffer> buffer = command_buffer();
      end_encoder();
      blit_ = [buffer blitCommandEncoder];
      if (!blit_)
        throw Error(ErrorKind::kDevice, fmt::format("metal: {} gave no blit encoder", info_.name));
    }
    return blit_;
  }

  // Sends what is encoded to the GPU without waiting for it.
  void commit() {
    if (!open_) return;
    end_encoder();
    [open_ commit];
    committed_.push_back(open_);
    open_ = nil;
    launches_open_ = 0;
  }

  // Commits, waits for every committed command buffer and reports the first that failed (a
  // kernel's fault, a lost device) with Metal's message.
  void wait() {
    commit();
    std::string failure;
    for (id<MTLCommandBuffer> buffer : committed_) {
      [buffer waitUntilCompleted];
      if (buffer.status == MTLCommandBufferStatusError && failure.empty())
        failure = describe(buffer.error);
    }
    committed_.clear();
    if (!failure.empty())
      throw Error(ErrorKind::kDevice,
                  fmt::format("metal: work on {} failed: {}", info_.name, failure));
  }
};

}  // namespace

const MetalDeviceInfo* probe_metal_device(std::string* why) {
  const Probe& p = probe();
  if (!p.device && why) *why = p.why;
  return p.device ? &p.info : nullptr;
}

std::shared_ptr<gpu_host::DeviceApi> open_metal_device(std::string* why) {
  struct Opened {
    std::shared_ptr<MetalDevice> device;
    std::string error;
  };
  // Created once and never destroyed, for the probe's reason.
  static const Opened* opened = [] {
    auto* o = new Opened;
    const Probe& p = probe();
    if (!p.device) {
      o->error = p.why;
      return o;
    }
    try {
      o->device = std::make_shared<MetalDevice>(p.device, p.info);
    } catch (const std::exception& e) {
      o->error = e.what();
    }
    return o;
  }();
  if (!opened->device && why) *why = opened->error;
  return opened->device;
}

}  // namespace rlx::metal
