// The cuda target's collective engine: an NCCL communicator over the ranks of one job, opened
// through Target::open_channel (the id-file rendezvous of nccl_rendezvous.h, then
// ncclCommInitRank on this rank's GPU) and used by the collective HIR ops the cuda target claims
// (collective_call.h). Every call is enqueued on the device's one stream, like a kernel.
//
// Failures never hang a rank: ncclCommInitRank runs under the rendezvous timeout, and a watchdog
// thread (communicators of two or more ranks) polls ncclCommGetAsyncError and the time since
// the running collective started on the device (stamped by stream-ordered host functions, so
// replays of a CUDA graph are covered too); on an error or past the timeout it aborts the
// communicator (ncclCommAbort), which ends its kernels, and the next check() throws an
// rlx::Error naming this rank and the collective.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cuda_device.h"
#include "nccl_api.h"
#include "rlx/core/communicator.h"
#include "rlx/core/device.h"
#include "rlx/core/dtype.h"

namespace rlx::cuda {

class NcclComm : public std::enable_shared_from_this<NcclComm> {
 public:
  // The job's world on `context`'s GPU. Throws rlx::Error naming this rank and the rendezvous
  // folder when the ranks do not meet within the timeout.
  static std::shared_ptr<NcclComm> open(const NcclApi& api, const CudaContext& context,
                                        const ChannelOptions& options);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  const std::string& name() const { return name_; }  // "world", "block:2 (world ranks 2, 3)"
  const NcclApi& api() const { return api_; }

  // The group of the job's ranks `c` puts this rank in: a communicator of its own with its own
  // unique id (published by the group's lowest world rank), opened when a collective first names
  // it (every member reaches that collective) and kept. The world itself for "world".
  std::shared_ptr<NcclComm> group(const Communicator& c);

  // Enqueued on the device's stream. Counts are elements of `dtype` (which nccl_dtype maps);
  // `in` and `out` may be the same memory. Reduce::kAvg needs NCCL 2.10.
  void all_reduce(const void* in, void* out, DType dtype, int64_t count, NcclReduce op);
  void all_gather(const void* in, void* out, DType dtype, int64_t count);
  void reduce_scatter(const void* in, void* out, DType dtype, int64_t count, NcclReduce op);
  // Block j (`count` elements) of in goes to rank j: grouped sends and receives.
  void all_to_all(const void* in, void* out, DType dtype, int64_t count);
  void broadcast(const void* in, void* out, DType dtype, int64_t count, int32_t root);
  // NCCL's send completes when the peer's receive runs (no buffering): a rank's Send and the
  // peer's Recv must not wait on each other through other exchanges.
  void send(const void* in, DType dtype, int64_t count, int32_t peer);
  void recv(void* out, DType dtype, int64_t count, int32_t peer);

  // Throws the failure the watchdog or an enqueue found (rlx::Error, kDevice).
  void check() const;
  // Whether collectives may be recorded into a CUDA graph (NCCL 2.9 or newer).
  bool capturable() const { return api_.version >= kNcclCapturableVersion; }

  // What the stream-ordered host functions stamp (public for their C callbacks).
  struct Watch {
    std::atomic<int64_t> started_ns{0};  // 0: no collective running on the device
    std::atomic<const char*> op{nullptr};
  };
  struct Begin {
    Watch* watch;
    const char* op;
  };

 private:
  NcclComm(const NcclApi& api, const CudaContext& context) : api_(api), context_(context) {}
  // Rendezvous on `key`, ncclCommInitRank under the timeout, then the watchdog.
  void init(const std::string& key);
  // Stamps, the NCCL call(s) `f` returning a result, the end stamp.
  template <typename F>
  void enqueue(const char* what, F&& f);
  void check_peer(const char* what, int32_t peer) const;
  [[noreturn]] void fail(const char* what, const std::string& why);
  void watchdog();

  const NcclApi& api_;
  const CudaContext& context_;
  NcclCommHandle comm_ = nullptr;
  int32_t rank_ = 0, size_ = 1;
  double timeout_s_ = 60;
  std::string name_ = "world";
  std::string folder_, key_;  // the rendezvous folder, this communicator's id-file key
  std::map<std::string, std::shared_ptr<NcclComm>> groups_;

  Watch watch_;
  std::map<const char*, std::unique_ptr<Begin>> begins_;  // one per op name (string literals)
  std::thread watchdog_;
  mutable std::mutex mutex_;  // guards failure_, stop_
  std::condition_variable wake_;
  bool stop_ = false;
  std::string failure_;
  std::atomic<bool> failed_{false}, aborted_{false};
};

// The communicator "world" of this process: the channel last opened on the cuda target. Throws a
// user error saying how to start ranks when none is open.
std::shared_ptr<NcclComm> world_nccl_comm(const std::string& op);

// Target::open_channel for cuda: NCCL on the device's GPU (DeviceBuffer handles are device
// pointers), which also becomes the world the graph's collectives run on. Throws rlx::Error
// (kUnsupported) when NCCL or the device is missing, saying which.
std::unique_ptr<Channel> open_nccl_channel(const ChannelOptions& options);

}  // namespace rlx::cuda
