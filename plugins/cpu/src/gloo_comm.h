// The cpu target's collective engine: a Gloo context over the ranks of one job (TCP on the
// host's network; Gloo's own algorithms), opened through Target::open_channel and used by the
// collective HIR ops (core/src/ops/ops_collective.cpp) the cpu target claims natively.
//
// Rendezvous (ChannelOptions::rendezvous): "file:///FOLDER[?timeout=SECONDS&host=ADDR&
// transport=tcp|ibverbs]": ranks publish their addresses in FOLDER (Gloo's FileStore; a shared
// file system across machines), listen on ADDR (default 127.0.0.1) and give up on any collective
// after SECONDS (default 60). A failure names this rank, the collective and the reason, so a
// killed peer ends every rank with a message instead of a hang.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rlx/core/communicator.h"
#include "rlx/core/device.h"
#include "rlx/core/dtype.h"

namespace gloo {
class Context;
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo

namespace rlx::cpu {

class CollectiveWorker;  // gloo_comm_worker.h

// How a reduction combines ranks; kMean is a sum divided by the number of ranks.
enum class Reduce { kSum, kProduct, kMax, kMin, kMean };

class GlooComm : public std::enable_shared_from_this<GlooComm> {
 public:
  static std::shared_ptr<GlooComm> open(const ChannelOptions& options);
  ~GlooComm();

  int32_t rank() const { return rank_; }
  int32_t size() const { return size_; }
  const std::string& name() const { return name_; }  // "world", "block:2 (world ranks 2, 3)"

  // The group of this job's ranks `c` puts this rank in (gloo_groups.cpp): a context of its own
  // over the same rendezvous, opened when a collective first names it (every member reaches
  // that collective) and kept. The world itself for "world". Only the world has groups.
  std::shared_ptr<GlooComm> group(const Communicator& c);

  // Counts are elements of dtype; `in` and `out` may be the same memory.
  void all_reduce(const void* in, void* out, DType dtype, int64_t count, Reduce op);
  // out = every rank's `count` elements, in rank order.
  void all_gather(const void* in, void* out, DType dtype, int64_t count);
  // out = block `rank` (of `count` elements) of the reduction over ranks of size*count elements.
  void reduce_scatter(const void* in, void* out, DType dtype, int64_t count, Reduce op);
  // Block j (`count` elements) of in goes to rank j, landing at block `rank` of its out.
  void all_to_all(const void* in, void* out, DType dtype, int64_t count);
  void broadcast(void* buffer, DType dtype, int64_t count, int32_t root);
  // Send returns once the bytes are copied: Gloo's TCP send completes only when the peer posts
  // its Recv, so a ring of Send-then-Recv would deadlock if Send waited. Pending sends complete
  // before the next collective (and before the channel closes).
  void send(const void* buffer, DType dtype, int64_t count, int32_t peer);
  void recv(void* buffer, DType dtype, int64_t count, int32_t peer);

  // all_reduce in the background, on this communicator's worker thread: `in` is copied to `out`
  // before it returns, `out` belongs to the worker until wait(ticket) returns (which rethrows
  // the collective's failure). Every other call on this communicator first waits for the
  // background ones, so each rank still runs its collectives one at a time, in program order.
  uint64_t start_all_reduce(const void* in, void* out, DType dtype, int64_t count, Reduce op);
  void wait(uint64_t ticket);
  void wait_all();

 private:
  GlooComm() = default;
  template <typename F>
  void guarded(const char* what, F&& f);
  void check_peer(const char* what, int32_t peer) const;
  void complete_sends();
  // Before any call that uses the context from the calling thread: the background collectives
  // and the pending sends complete first.
  void drain();
  void stop_worker();
  // all_reduce's exchange on `data` (what the worker runs).
  void reduce_in_place(void* data, DType dtype, int64_t count, Reduce op);

  struct PendingSend;
  std::vector<std::unique_ptr<PendingSend>> pending_;
  std::unique_ptr<CollectiveWorker> worker_;  // gloo_comm_worker.h

  int32_t rank_ = 0, size_ = 1;
  int64_t timeout_ms_ = 60000;
  std::string name_ = "world";  // in messages: the communicator
  std::shared_ptr<gloo::Context> context_;
  // What a group opens its context with: the rendezvous folder, this world's key prefix in it,
  // the transport's device.
  std::string folder_, prefix_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::map<std::string, std::shared_ptr<GlooComm>> groups_;
  std::map<int32_t, uint64_t> sent_, received_;  // messages per peer: matched slots
  // After a failure the context is unusable: refuse further calls (set by the worker too).
  std::atomic<bool> failed_{false};
};

// The communicator "world" of this process: the channel last opened on the cpu target. Throws a
// user error saying how to start ranks when none is open.
std::shared_ptr<GlooComm> world_comm(const std::string& op);
void set_world_comm(std::shared_ptr<GlooComm> comm);

// The Channel the contract hands out (host buffers: a DeviceBuffer's handle is its address).
std::unique_ptr<Channel> open_gloo_channel(const ChannelOptions& options);

}  // namespace rlx::cpu
