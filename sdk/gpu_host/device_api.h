// What a GPU-like target implements to run LIR programs with the shared host executor
// (device_executable.h): a device-API adapter (allocate, upload, download, copy, build a module,
// launch a kernel over N work-items) and a kernel library (the dialect the renderer writes, plus
// the library calls the renderer cannot express). OpenCL is the first adapter (plugins/gpu);
// Vulkan, OpenGL, WebGPU and DirectX implement the same two interfaces with their APIs.
//
// The executor calls an adapter from one thread at a time; an adapter may be shared by every
// executable of a process. Methods throw rlx::Error with the API's error named.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rlx/core/device.h"
#include "rlx/core/error.h"
#include "rlx/core/lir.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

// One device allocation (cl_mem, VkBuffer + memory, ...); the adapter owns its meaning. The
// contract's buffer type, so a caller's device tensors bind to kernels as they are.
using DeviceBuffer = rlx::DeviceBuffer;

// A built module (cl_program, VkShaderModule set, ...): source text of many kernels compiled once.
class Module {
 public:
  virtual ~Module() = default;
};

// A kernel the target writes itself for a library call (gather and scatter read through
// indices, which LIR's affine loads cannot say).
struct NativeKernel {
  std::string source;            // the kernel function(s), in the target's dialect
  std::string symbol;            // the entry point
  std::vector<int32_t> buffers;  // storage buffer ids bound in order
  int64_t work_items = 0;
  // Whole-buffer copies (source id, destination id) enqueued before the launch (scatter starts
  // from a copy of its operand).
  std::vector<std::pair<int32_t, int32_t>> copies_before;
  // Set when the kernel checks indices: the executor binds its status buffer after `buffers`
  // and, after the run, reports a bad index found in `status_slot` as
  // "<where>: index V (at position P of the indices) is out of range for an axis of size N".
  bool checks_indices = false;
  std::string where;  // "gather ('node location')"
  int64_t axis_size = 0;
};

// A scatter's updates computed where its kernel reads them, by the elementwise loop kernel that
// would have stored them (operand_prologues.h): `prologue`'s parameters are `buffers` (storage
// ids) by position.
struct ComputedUpdates {
  std::shared_ptr<const sdk::OperandPrologue> prologue;
  std::vector<int32_t> buffers;
};

// The language side: shared by a target's executor and its `emit` (so the emitted source is
// exactly what runs).
class KernelLibrary {
 public:
  virtual ~KernelLibrary() = default;
  virtual const sdk::Dialect& dialect() const = 0;
  // Whether the library has a kernel for `callee` ("gather", "scatter"); dot_general and while
  // are the executor's own.
  virtual bool has_call(const std::string& callee) const = 0;
  // The kernel for call number `index` of `program`. `status_slot` is its slot in the status
  // buffer (4 x int32: flag, position, value low and high words) when it checks indices.
  // `updates`, where set (only for a scatter, and only where computes_updates()), computes the
  // scatter's updates in the kernel instead of reading its updates operand.
  virtual NativeKernel call_kernel(const lir::CallKernel& call, const lir::Program& program,
                                   int32_t index, int32_t status_slot,
                                   const ComputedUpdates* updates) const = 0;
  // Whether call_kernel takes ComputedUpdates for a scatter.
  virtual bool computes_updates() const { return false; }
  // Whether the prologues its kernels take (a scatter's updates, an attention's q) may also
  // compute the norm before them (sdk::NormedRead); where not, that norm keeps its launch.
  virtual bool computes_norms() const { return true; }
  // The vendor library (cuBLASLt, ...) that computes `shape` instead of a rendered kernel, or ""
  // when the library renders it. A product taken here runs on the same device at the same dtypes
  // and accumulation as the rendered kernel would; its epilogue kernels run after it.
  virtual std::string vendor_matmul(const sdk::MatmulShape& shape) const {
    (void)shape;
    return "";
  }
  // Whether the vendor product also adds a bias row (a vector along n) and a residual (a tensor
  // of C's shape and dtype) before storing C, so the kernel that adds them is not launched.
  virtual bool vendor_adds_bias_and_residual() const { return false; }
  // The vendor routines (cuSOLVER, ...) that run library call `call` through the device API
  // (DeviceApi::prepare_call) instead of a kernel of the module, or "" when the library has none.
  virtual std::string vendor_call(const lir::CallKernel& call) const {
    (void)call;
    return "";
  }
  // The library's own kernel for product `shape` (a GEMV with wide loads, ...), or nullopt for
  // the SDK's render_matmul; asked after vendor_matmul declined. It honours shape.epilogue and
  // shape.a_norm or declines (a declined norm prologue keeps the norm's own launch), and
  // its `groups` count 64 work-items each, as render_matmul's do.
  virtual std::optional<sdk::MatmulKernel> own_matmul(const sdk::MatmulShape& shape) const {
    (void)shape;
    return std::nullopt;
  }
  // The library's own attention kernel for `shape` (tensor cores, ...), or nullopt for the SDK's
  // render_attention. Its `groups` count 64 work-items each, as render_attention's do.
  virtual std::optional<sdk::AttentionKernel> own_attention(const sdk::AttentionShape& shape) const {
    (void)shape;
    return std::nullopt;
  }
};

// What a vendor product adds to A x B before it stores C: nullptr where the plan fused nothing.
struct VendorOperands {
  const DeviceBuffer* bias = nullptr;      // [n], C's dtype
  const DeviceBuffer* residual = nullptr;  // C's shape and dtype
};

// The additions planned with a vendor product (module_plan.h, LibraryMatmul).
struct VendorEpilogue {
  bool bias = false, residual = false;
};

// A product the device API runs through a vendor library, planned once (descriptors, algorithm
// choice) and launched on every run with A, B and C in that order.
class VendorMatmul {
 public:
  virtual ~VendorMatmul() = default;
  virtual void run(const DeviceBuffer& a, const DeviceBuffer& b, const DeviceBuffer& c,
                   const VendorOperands& add) = 0;
};

// A library call the device API runs itself (KernelLibrary::vendor_call): vendor routines and the
// small kernels around them, planned once (workspaces, helper modules) and enqueued on every run
// with the call's inputs then its outputs.
class VendorCall {
 public:
  virtual ~VendorCall() = default;
  virtual void run(const std::vector<const DeviceBuffer*>& operands) = 0;
  // After the run's work has finished: throws rlx::Error (kUser) when a routine reported a
  // property of the input (a singular matrix, no convergence), as the cpu's LAPACK calls do.
  virtual void check() {}
  // Whether run() may be recorded (DeviceApi::begin_recording): no host synchronisation inside.
  virtual bool recordable() const { return false; }
};

// Work recorded once and replayed (a CUDA graph): the same launches on the same buffers.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
};

// A point in the device queue's timeline (RLX_PROFILE, rlx bench): record() queues it behind the
// work queued so far; ms_since(earlier) waits until this stamp's work has completed and gives
// the device time between the two.
class DeviceStamp {
 public:
  virtual ~DeviceStamp() = default;
  virtual void record() = 0;
  virtual double ms_since(const DeviceStamp& earlier) const = 0;
};

// Device memory allocated through a DeviceApi, in bytes.
struct DeviceMemoryUse {
  uint64_t bytes = 0, peak_bytes = 0;
};

// The device side.
class DeviceApi {
 public:
  virtual ~DeviceApi() = default;
  virtual std::string target_name() const = 0;  // "gpu": prefixes messages
  virtual const KernelLibrary& library() const = 0;
  virtual DeviceBuffer allocate(size_t bytes) = 0;  // bytes > 0
  virtual void release(DeviceBuffer& buffer) noexcept = 0;
  // Transfers are ordered with launches. download() returns when the data is on the host.
  virtual void upload(const DeviceBuffer& dst, const void* src, size_t bytes) = 0;
  virtual void download(const DeviceBuffer& src, void* dst, size_t bytes) = 0;
  virtual void copy(const DeviceBuffer& src, const DeviceBuffer& dst, size_t bytes) = 0;
  // Compiles a whole module; throws rlx::Error (kCompile) with the compiler's log.
  virtual std::unique_ptr<Module> build(const std::string& source) = 0;
  // Enqueues `symbol` over work_items (> 0) items, buffers bound as parameters in order.
  virtual void launch(Module& module, const std::string& symbol,
                      const std::vector<const DeviceBuffer*>& args, int64_t work_items) = 0;
  virtual void finish() = 0;
  // What the device allows (contract 2.0 DeviceLimits); {} when the adapter does not say.
  virtual DeviceLimits limits() const { return {}; }
  // Sets `bytes` of `buffer` to zero, ordered with launches (and recordable, where recording is).
  virtual void zero(const DeviceBuffer& buffer, size_t bytes) {
    const std::vector<uint8_t> zeros(bytes, 0);
    upload(buffer, zeros.data(), bytes);
  }
  // The product KernelLibrary::vendor_matmul took, planned; throws rlx::Error (kCompile) saying
  // why when the vendor library cannot run it here.
  virtual std::unique_ptr<VendorMatmul> prepare_matmul(const sdk::MatmulShape& shape,
                                                       const VendorEpilogue& epilogue) {
    (void)epilogue;
    throw Error(ErrorKind::kCompile,
                target_name() + ": this device runs no vendor matrix products (" + shape.name + ")");
  }
  // The call KernelLibrary::vendor_call took, planned; throws rlx::Error (kCompile) saying why
  // when its vendor library cannot run it here.
  virtual std::unique_ptr<VendorCall> prepare_call(const lir::CallKernel& call,
                                                   const lir::Program& program) {
    (void)program;
    throw Error(ErrorKind::kCompile,
                target_name() + ": this device runs no vendor library calls (" + call.callee + ")");
  }
  // Recording: launches, copies within the device, zero() and vendor products between
  // begin_recording() and end_recording() are not run but recorded, and replay() runs them
  // again on the same buffers with one call. Devices without it answer false.
  virtual bool can_record() const { return false; }
  virtual void begin_recording() {}
  virtual std::unique_ptr<RecordedWork> end_recording() { return nullptr; }
  virtual void replay(RecordedWork& work) { (void)work; }
  // A timestamp of the device's own clock (CUDA events); nullptr when it has none, and a profile
  // then waits for each launch to finish on the host's clock.
  virtual std::unique_ptr<DeviceStamp> make_stamp() { return nullptr; }
  // What allocate() and the vendor libraries' workspaces hold now and at most so far; nullopt
  // where the device API does not count.
  virtual std::optional<DeviceMemoryUse> memory_use() const { return std::nullopt; }
  // Page-locked host memory that download() writes at the bus's full rate (cuMemHostAlloc):
  // has_host_memory() says whether the API has it; allocate_host() returns nullptr (or throws)
  // when none is left. The runtime allocates large host outputs from it (rlx/core/host_memory.h)
  // through a HostMemoryPool.
  virtual bool has_host_memory() const { return false; }
  virtual void* allocate_host(size_t bytes) {
    (void)bytes;
    return nullptr;
  }
  virtual void release_host(void* data) noexcept { (void)data; }
};

}  // namespace rlx::gpu_host
