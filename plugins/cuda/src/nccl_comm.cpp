#include "nccl_comm.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "nccl_rendezvous.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Run by the driver in stream order, so the stamps are the device's timeline (a CUDA graph's
// replay included), not the host's enqueue order. Host functions must not call CUDA: they store.
void on_begin(void* data) {
  auto* b = static_cast<NcclComm::Begin*>(data);
  b->watch->op.store(b->op);
  b->watch->started_ns.store(now_ns());
}
void on_end(void* data) {
  static_cast<NcclComm::Watch*>(data)->started_ns.store(0);
}

std::mutex& world_mutex() {
  static std::mutex m;
  return m;
}
std::weak_ptr<NcclComm>& world_slot() {
  static std::weak_ptr<NcclComm> w;
  return w;
}

// Each channel this process opens gets its own id file, so a second channel on one folder never
// reads the first one's id (every rank opens channels in the same order).
std::string next_world_key() {
  static int n = 0;
  std::lock_guard<std::mutex> lock(world_mutex());
  const int g = n++;
  return g == 0 ? "world" : fmt::format("world.{}", g);
}

// What the thread running ncclCommInitRank (or ncclCommDestroy) hands back; shared with it,
// because a rank that gives up at the timeout leaves the thread behind (NCCL's init cannot be
// interrupted), and the thread then aborts the communicator if it is ever made.
struct InitState {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false, abandoned = false;
  NcclResult rc = kNcclSuccess;
  NcclCommHandle comm = nullptr;
};

}  // namespace

std::shared_ptr<NcclComm> NcclComm::open(const NcclApi& api, const CudaContext& context,
                                         const ChannelOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw_user_error(fmt::format("cuda collectives: rank {} is not within a world of {} ranks",
                                 options.rank, options.world_size));
  const NcclEndpoint e = parse_nccl_rendezvous(options.rendezvous);
  std::shared_ptr<NcclComm> c(new NcclComm(api, context));
  c->rank_ = options.rank;
  c->size_ = options.world_size;
  c->timeout_s_ = e.timeout_s;
  c->folder_ = e.folder.string();
  c->init(next_world_key());
  return c;
}

void NcclComm::init(const std::string& key) {
  key_ = key;
  // NVLink SHARP (NVLS) makes NCCL create multicast objects (cuMulticastCreate), which on shared
  // machines can take GPUs out of service for other users when a job ends badly; rlx keeps it
  // off unless the user turned it on (overwrite = 0 keeps their choice).
  ::setenv("NCCL_NVLS_ENABLE", "0", 0);
  const std::string who = name_ == "world"
                              ? fmt::format("rank {} of {}", rank_, size_)
                              : fmt::format("rank {} of {} in {}", rank_, size_, name_);
  NcclUniqueId id;
  if (rank_ == 0) {
    if (NcclResult rc = api_.get_unique_id(&id); rc != kNcclSuccess)
      throw_device_error(fmt::format("{}: ncclGetUniqueId failed: {}", who, api_.error_text(rc)));
    if (size_ > 1) publish_unique_id(folder_, key, std::string(id.bytes.data(), id.bytes.size()));
  } else {
    const std::string bytes = await_unique_id(folder_, key, kNcclUniqueIdBytes, timeout_s_, who);
    std::memcpy(id.bytes.data(), bytes.data(), kNcclUniqueIdBytes);
  }
  auto state = std::make_shared<InitState>();
  std::thread([state, api = &api_, ctx = &context_, id, n = size_, r = rank_] {
    NcclCommHandle comm = nullptr;
    // NCCL runs on the current device: this rank's, through the plugin's primary context.
    NcclResult rc = ctx->cu.cuCtxSetCurrent(ctx->context) == kCudaSuccess
                        ? api->comm_init_rank(&comm, n, id, r)
                        : kNcclUnhandledCudaError;
    std::lock_guard<std::mutex> lock(state->mutex);
    state->rc = rc;
    state->comm = comm;
    state->done = true;
    if (state->abandoned && comm) api->comm_abort(comm);
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  if (!state->done_cv.wait_for(lock, std::chrono::duration<double>(timeout_s_),
                               [&] { return state->done; })) {
    state->abandoned = true;
    throw_device_error(fmt::format(
        "{}: ncclCommInitRank did not complete within {} s (rendezvous folder {}): a peer rank "
        "exited, hangs or uses another folder, or the ranks cannot reach each other (NCCL's "
        "NCCL_SOCKET_IFNAME chooses the network)",
        who, timeout_s_, folder_));
  }
  if (state->rc != kNcclSuccess)
    throw_device_error(fmt::format(
        "{}: ncclCommInitRank failed: {}. Two ranks on one GPU fail this way: each rank needs "
        "a GPU of its own (RLX_LOCAL_RANK or mpirun's local rank picks it; docs/parallel.md); "
        "NCCL_DEBUG=WARN says more",
        who, api_.error_text(state->rc)));
  comm_ = state->comm;
  if (size_ > 1) watchdog_ = std::thread(&NcclComm::watchdog, this);
}

NcclComm::~NcclComm() {
  // Let the work already enqueued finish while the watchdog still guards it, so destroying a
  // healthy communicator never waits on a peer that is gone.
  if (comm_ && !failed_ && std::uncaught_exceptions() == 0 &&
      context_.cu.cuCtxSetCurrent(context_.context) == kCudaSuccess)
    context_.cu.cuStreamSynchronize(context_.stream);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  groups_.clear();
  if (!comm_ || aborted_) return;
  if (failed_ || std::uncaught_exceptions() > 0) {
    api_.comm_abort(comm_);
    return;
  }
  // Recent NCCLs flush and tear down with the other ranks of the node in ncclCommDestroy, which
  // waits for ranks that never come: it runs on a thread of its own, left behind after the
  // timeout, so the rank still exits.
  auto state = std::make_shared<InitState>();
  std::thread([state, api = &api_, ctx = &context_, comm = comm_] {
    ctx->cu.cuCtxSetCurrent(ctx->context);
    api->comm_destroy(comm);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->done = true;
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mutex);
  state->done_cv.wait_for(lock, std::chrono::duration<double>(timeout_s_),
                          [&] { return state->done; });
}

void NcclComm::watchdog() {
  context_.cu.cuCtxSetCurrent(context_.context);
  const auto timeout_ns = static_cast<int64_t>(timeout_s_ * 1e9);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_ && !failed_) {
    wake_.wait_for(lock, std::chrono::milliseconds(20));
    if (stop_ || failed_) return;
    NcclResult async = kNcclSuccess;
    api_.comm_get_async_error(comm_, &async);
    std::string why;
    if (async != kNcclSuccess && async != kNcclInProgress) {
      why = fmt::format("NCCL reported {}: a peer rank exited, was killed or lost its network",
                        api_.error_text(async));
    } else if (const int64_t started = watch_.started_ns.load();
               started != 0 && now_ns() - started > timeout_ns) {
      why = fmt::format(
          "it did not complete within {} s (the collective timeout): a peer rank hangs, exited "
          "or never reached it",
          timeout_s_);
    }
    if (why.empty()) continue;
    const char* op = watch_.op.load();
    failure_ = fmt::format(
        "rank {} of {}: collective {} on communicator \"{}\" failed: {}; the communicator was "
        "aborted (ncclCommAbort). The launcher names the rank that ended first",
        rank_, size_, op ? op : "(between collectives)", name_, why);
    failed_ = true;
    lock.unlock();
    // Ends the communicator's kernels, so a host blocked on the stream returns and check() (or
    // the next collective) reports the failure.
    api_.comm_abort(comm_);
    aborted_ = true;
    return;
  }
}

void NcclComm::check() const {
  if (!failed_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  throw_device_error(failure_);
}

void NcclComm::fail(const char* what, const std::string& why) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_)
      failure_ = fmt::format("rank {} of {}: collective {} on communicator \"{}\" failed: {}",
                             rank_, size_, what, name_, why);
    failed_ = true;
    message = failure_;
  }
  throw_device_error(message);
}

template <typename F>
void NcclComm::enqueue(const char* what, F&& f) {
  check();
  const DriverApi& cu = context_.cu;
  if (CuResult rc = cu.cuCtxSetCurrent(context_.context); rc != kCudaSuccess)
    fail(what, "cuCtxSetCurrent: " + cu_error_name(cu, rc));
  if (size_ > 1) {
    std::unique_ptr<Begin>& b = begins_[what];
    if (!b) b = std::make_unique<Begin>(Begin{&watch_, what});
    if (CuResult rc = cu.cuLaunchHostFunc(context_.stream, &on_begin, b.get()); rc != kCudaSuccess)
      fail(what, "cuLaunchHostFunc: " + cu_error_name(cu, rc));
  }
  if (NcclResult rc = f(); rc != kNcclSuccess && rc != kNcclInProgress)
    fail(what, api_.error_text(rc));
  if (size_ > 1)
    if (CuResult rc = cu.cuLaunchHostFunc(context_.stream, &on_end, &watch_); rc != kCudaSuccess)
      fail(what, "cuLaunchHostFunc: " + cu_error_name(cu, rc));
}

namespace {

int dtype_or_throw(const NcclApi& api, DType dtype, const char* what) {
  if (std::optional<int> t = nccl_dtype(dtype, api.version)) return *t;
  throw_unsupported(fmt::format("cuda: {} on {}: NCCL {} has no such type", what, dtype_name(dtype),
                                api.version_text()));
}

}  // namespace

void NcclComm::all_reduce(const void* in, void* out, DType dtype, int64_t count, NcclReduce op) {
  const int t = dtype_or_throw(api_, dtype, "AllReduce");
  if (op == NcclReduce::kAvg && api_.version < kNcclAvgVersion)
    throw_unsupported(fmt::format("cuda: AllReduce mean needs ncclAvg (NCCL 2.10); this is {}",
                                  api_.version_text()));
  if (count == 0) return;
  enqueue("AllReduce", [&] {
    return api_.all_reduce(in, out, static_cast<size_t>(count), t, static_cast<int>(op), comm_,
                           context_.stream);
  });
}

void NcclComm::all_gather(const void* in, void* out, DType dtype, int64_t count) {
  const int t = dtype_or_throw(api_, dtype, "AllGather");
  if (count == 0) return;
  enqueue("AllGather", [&] {
    return api_.all_gather(in, out, static_cast<size_t>(count), t, comm_, context_.stream);
  });
}

void NcclComm::reduce_scatter(const void* in, void* out, DType dtype, int64_t count,
                              NcclReduce op) {
  const int t = dtype_or_throw(api_, dtype, "ReduceScatter");
  if (op == NcclReduce::kAvg && api_.version < kNcclAvgVersion)
    throw_unsupported(fmt::format("cuda: ReduceScatter mean needs ncclAvg (NCCL 2.10); this is {}",
                                  api_.version_text()));
  if (count == 0) return;
  enqueue("ReduceScatter", [&] {
    return api_.reduce_scatter(in, out, static_cast<size_t>(count), t, static_cast<int>(op), comm_,
                               context_.stream);
  });
}

void NcclComm::all_to_all(const void* in, void* out, DType dtype, int64_t count) {
  const int t = dtype_or_throw(api_, dtype, "AllToAll");
  if (count == 0) return;
  const size_t block = static_cast<size_t>(count) * dtype_size(dtype);
  enqueue("AllToAll", [&] {
    // Every pair's send and receive in one group, so no rank's send waits for a receive queued
    // behind it; the group must be closed even when a call in it failed.
    NcclResult first = api_.group_start();
    if (first != kNcclSuccess) return first;
    for (int32_t j = 0; j < size_; ++j) {
      NcclResult s = api_.send(static_cast<const char*>(in) + j * block, static_cast<size_t>(count),
                               t, j, comm_, context_.stream);
      NcclResult r = api_.recv(static_cast<char*>(out) + j * block, static_cast<size_t>(count), t,
                               j, comm_, context_.stream);
      if (first == kNcclSuccess) first = s != kNcclSuccess ? s : r;
    }
    NcclResult end = api_.group_end();
    return first != kNcclSuccess ? first : end;
  });
}

void NcclComm::broadcast(const void* in, void* out, DType dtype, int64_t count, int32_t root) {
  const int t = dtype_or_throw(api_, dtype, "Broadcast");
  if (root < 0 || root >= size_)
    throw_user_error(fmt::format("rank {} of {}: Broadcast from rank {}, which does not exist",
                                 rank_, size_, root));
  if (count == 0) return;
  enqueue("Broadcast", [&] {
    return api_.broadcast(in, out, static_cast<size_t>(count), t, root, comm_, context_.stream);
  });
}

void NcclComm::check_peer(const char* what, int32_t peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw_user_error(fmt::format(
        "rank {} of {}: {} names rank {}, which is not another rank of the communicator (0..{})",
        rank_, size_, what, peer, size_ - 1));
}

void NcclComm::send(const void* in, DType dtype, int64_t count, int32_t peer) {
  const int t = dtype_or_throw(api_, dtype, "Send");
  check_peer("Send", peer);
  if (count == 0) return;
  enqueue("Send", [&] {
    return api_.send(in, static_cast<size_t>(count), t, peer, comm_, context_.stream);
  });
}

void NcclComm::recv(void* out, DType dtype, int64_t count, int32_t peer) {
  const int t = dtype_or_throw(api_, dtype, "Recv");
  check_peer("Recv", peer);
  if (count == 0) return;
  enqueue("Recv", [&] {
    return api_.recv(out, static_cast<size_t>(count), t, peer, comm_, context_.stream);
  });
}

// Groups of the job's ranks (rlx/core/communicator.h) as communicators of their own: each
// group's lowest world rank publishes its id under a key naming the channel, the partition and
// that rank, so groups of one partition (and partitions of one job) never read each other's ids.
std::shared_ptr<NcclComm> NcclComm::group(const Communicator& c) {
  if (c.kind == Communicator::Kind::kWorld) return shared_from_this();
  if (name_ != "world")
    throw_internal_error(
        fmt::format("communicator \"{}\" asked of a group, not of the world", c.name()));
  if (auto it = groups_.find(c.name()); it != groups_.end()) return it->second;
  const std::vector<int32_t> ranks = c.group_of(rank_, size_);
  std::string members;
  for (int32_t r : ranks) members += (members.empty() ? "" : ", ") + std::to_string(r);
  std::shared_ptr<NcclComm> g(new NcclComm(api_, context_));
  g->rank_ = static_cast<int32_t>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
  g->size_ = static_cast<int32_t>(ranks.size());
  g->timeout_s_ = timeout_s_;
  g->folder_ = folder_;
  g->name_ = fmt::format("{} (world ranks {})", c.name(), members);
  check();
  g->init(fmt::format("{}.{}.from{}", key_, c.name(), ranks.front()));
  groups_[c.name()] = g;
  return g;
}

std::shared_ptr<NcclComm> world_nccl_comm(const std::string& op) {
  std::lock_guard<std::mutex> lock(world_mutex());
  std::shared_ptr<NcclComm> c = world_slot().lock();
  if (!c)
    throw_user_error(fmt::format(
        "{} needs the communicator \"world\", and this process has joined no ranks: start the "
        "ranks with `rlx run|generate|bench ... --target cuda --nproc N`, under `mpirun -n N "
        "rlx ...`, or open a channel on the cuda target (Target::open_channel) before running",
        op));
  return c;
}

namespace {

NcclReduce reduce_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return NcclReduce::kSum;
    case ReduceOp::kProduct:
      return NcclReduce::kProduct;
    case ReduceOp::kMax:
      return NcclReduce::kMax;
    case ReduceOp::kMin:
      return NcclReduce::kMin;
  }
  return NcclReduce::kSum;
}

// The contract's Channel on device buffers of the cuda target (handles are device pointers); the
// queue is the device's one stream.
class NcclChannel final : public Channel {
 public:
  explicit NcclChannel(std::shared_ptr<NcclComm> c) : c_(std::move(c)) {}
  int32_t rank() const override { return c_->rank(); }
  int32_t world_size() const override { return c_->size(); }
  void all_reduce(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count,
                  ReduceOp op, QueueId) override {
    c_->all_reduce(in.handle, out.handle, dtype, count, reduce_of(op));
  }
  void all_gather(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count,
                  QueueId) override {
    c_->all_gather(in.handle, out.handle, dtype, count);
  }
  void reduce_scatter(const DeviceBuffer& in, const DeviceBuffer& out, DType dtype, int64_t count,
                      ReduceOp op, QueueId) override {
    c_->reduce_scatter(in.handle, out.handle, dtype, count, reduce_of(op));
  }
  void broadcast(const DeviceBuffer& b, DType dtype, int64_t count, int32_t root,
                 QueueId) override {
    c_->broadcast(b.handle, b.handle, dtype, count, root);
  }
  void send(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId) override {
    c_->send(b.handle, dtype, count, peer);
  }
  void recv(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId) override {
    c_->recv(b.handle, dtype, count, peer);
  }

 private:
  std::shared_ptr<NcclComm> c_;
};

}  // namespace

std::unique_ptr<Channel> open_nccl_channel(const ChannelOptions& options) {
  std::string why;
  const NcclApi* api = nccl_api(&why);
  if (!api) throw_unsupported("cuda collectives run through NCCL, and " + why);
  const CudaContext* context = cuda_context(&why);
  if (!context)
    throw_unsupported(fmt::format("cuda collectives need a CUDA device for rank {} of {}: {}",
                                  options.rank, options.world_size, why));
  std::shared_ptr<NcclComm> c = NcclComm::open(*api, *context, options);
  {
    std::lock_guard<std::mutex> lock(world_mutex());
    world_slot() = c;  // the graph's collectives run on the channel last opened
  }
  return std::make_unique<NcclChannel>(std::move(c));
}

}  // namespace rlx::cuda
