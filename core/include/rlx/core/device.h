// A target's own memory and work queues (plugin contract 2.0), and the Channel its collectives
// run on. A compiled program runs on buffers that stay in the device's memory across runs:
// weights are uploaded once, and a decoder's KV cache, an optimizer's state or an activation
// that feeds the next run never visit the host unless the caller downloads them.
//
// Ownership: a DeviceBuffer is a plain handle; whoever allocated it releases it through the same
// Device (DeviceTensor in runtime.h does that for the runtime's users). Thread safety: a Device
// may be called from one thread at a time; buffers, queues and events of one Device are never
// passed to another.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rlx/core/dtype.h"

namespace rlx {

// One allocation in a device's memory. `handle` means what the device says (a cl_mem, a
// VkBuffer with its memory, a host pointer for targets that compute in host memory).
struct DeviceBuffer {
  void* handle = nullptr;
  size_t bytes = 0;
  bool valid() const { return handle != nullptr; }
};

// What code generation and planning must respect on a device; 0 means "no limit known".
struct DeviceLimits {
  uint64_t max_buffer_bytes = 0;        // largest single allocation
  uint32_t max_buffers_per_kernel = 0;  // storage buffers one kernel may bind (webgpu: per stage)
  uint32_t max_workgroup_size = 0;      // work-items of one workgroup
  uint64_t shared_memory_bytes = 0;     // workgroup-shared (local) memory
  uint32_t subgroup_size = 0;           // warp / wavefront / SIMD width
};

// An ordered stream of device work (copies and program runs). Queue 0 always exists.
using QueueId = uint32_t;
// A point in a queue: everything enqueued on it before record() happens before the event.
struct Event {
  QueueId queue = 0;
  uint64_t sequence = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceLimits limits() const = 0;
  // bytes may be 0 (a zero-size tensor still gets a handle).
  virtual DeviceBuffer allocate(size_t bytes) = 0;
  virtual void release(DeviceBuffer& buffer) noexcept = 0;
  // The host address of a buffer the host can read and write directly (host-memory targets,
  // unified memory), or nullptr. The runtime passes such buffers to programs as host memory.
  virtual void* host_address(const DeviceBuffer& buffer) const = 0;

  // Transfers are enqueued on `queue` in order with its other work. upload() may reuse `src`
  // when it returns; download() has written `dst` once an event recorded after it has completed
  // (synchronize). Offsets and sizes are in bytes and must lie inside the buffer.
  virtual void upload(const DeviceBuffer& dst, size_t offset, const void* src, size_t bytes,
                      QueueId queue = 0) = 0;
  virtual void download(const DeviceBuffer& src, size_t offset, void* dst, size_t bytes,
                        QueueId queue = 0) = 0;
  virtual void copy(const DeviceBuffer& src, size_t src_offset, const DeviceBuffer& dst,
                    size_t dst_offset, size_t bytes, QueueId queue = 0) = 0;

  // A new queue; a device with one hardware queue may return the same in-order queue for all
  // (which orders every pair of operations, so every event dependency holds).
  virtual QueueId create_queue() = 0;
  virtual Event record(QueueId queue) = 0;
  // Work enqueued on `queue` after this call starts after `event`.
  virtual void wait(QueueId queue, const Event& event) = 0;
  // Returns when everything before `event` has completed, downloads included.
  virtual void synchronize(const Event& event) = 0;
};

// Collectives over the ranks of one job, on device buffers of the Device the channel was opened
// for. Counts are elements of `dtype`. Each call is enqueued on `queue` like a transfer; every
// rank must make the same calls in the same order.
enum class ReduceOp { kSum, kProduct, kMax, kMin };

struct ChannelOptions {
  int32_t rank = 0;
  int32_t world_size = 1;
  // How ranks find each other: "tcp://host:port", "file:///shared/path", or a transport's own
  // scheme (an NCCL unique id); the collectives issue defines the accepted forms.
  std::string rendezvous;
};

class Channel {
 public:
  virtual ~Channel() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t world_size() const = 0;
  // out[i] = op over ranks of in[i], on every rank; in and out may be the same buffer.
  virtual void all_reduce(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype,
                          int64_t count, ReduceOp op, QueueId queue = 0) = 0;
  // out = concatenation over ranks of each rank's `count` elements.
  virtual void all_gather(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype,
                          int64_t count, QueueId queue = 0) = 0;
  // Rank r gets block r (of `count` elements) of the reduction over ranks.
  virtual void reduce_scatter(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype,
                              int64_t count, ReduceOp op, QueueId queue = 0) = 0;
  virtual void broadcast(const DeviceBuffer& buffer, DType dtype, int64_t count, int32_t root,
                         QueueId queue = 0) = 0;
  virtual void send(const DeviceBuffer& buffer, DType dtype, int64_t count, int32_t peer,
                    QueueId queue = 0) = 0;
  virtual void recv(const DeviceBuffer& buffer, DType dtype, int64_t count, int32_t peer,
                    QueueId queue = 0) = 0;
};

}  // namespace rlx
