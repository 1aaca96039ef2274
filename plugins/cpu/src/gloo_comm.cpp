#include "gloo_comm.h"

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/ibverbs/device.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <vector>

#include "gloo_comm_worker.h"
#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/sdk/rendezvous.h"

namespace rlx::cpu {

namespace {

namespace fs = std::filesystem;

sdk::Rendezvous parse_gloo_rendezvous(const std::string& text) {
  return sdk::parse_rendezvous(
      text, "cpu collectives",
      "the cpu target (Gloo) takes file:///FOLDER[?timeout=SECONDS&host=ADDR&transport=tcp|ibverbs]");
}

// Gloo's ibverbs transport is built into this Gloo, but rlx's collectives use unbound buffers,
// which that transport does not provide (in Gloo 0.5): with an RDMA device it is refused for that
// reason, without one for the missing device.
[[noreturn]] void refuse_ibverbs() {
  std::vector<std::string> names;
  try {
    names = gloo::transport::ibverbs::getDeviceNames();
  } catch (const std::exception&) {
  }
  if (names.empty())
    throw_unsupported(
        "cpu collectives: --transport ibverbs needs an RDMA device and this machine has none "
        "(libibverbs lists no device); use --transport tcp");
  throw_unsupported(fmt::format(
      "cpu collectives: RDMA device {} found, but Gloo's ibverbs transport has no unbound "
      "buffers (the interface rlx's collectives use); use --transport tcp",
      names.front()));
}

// Gloo's reduction callback for element type T; f16 and bf16 go through f32 per element. The
// operation is chosen outside the loops so each loop vectorizes (Gloo calls this per segment
// of a large tensor: it is most of an all-reduce's arithmetic).
template <typename T>
void combine(T* out, const T* a, const T* b, size_t n, Reduce op) {
  switch (op) {
    case Reduce::kSum:
    case Reduce::kMean:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(a[i] + b[i]);
      break;
    case Reduce::kProduct:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<T>(a[i] * b[i]);
      break;
    case Reduce::kMax:
      for (size_t i = 0; i < n; ++i) out[i] = a[i] < b[i] ? b[i] : a[i];
      break;
    case Reduce::kMin:
      for (size_t i = 0; i < n; ++i) out[i] = b[i] < a[i] ? b[i] : a[i];
      break;
  }
}

template <float (*to)(uint16_t), uint16_t (*from)(float)>
void combine_16(uint16_t* out, const uint16_t* a, const uint16_t* b, size_t n, Reduce op) {
  for (size_t i = 0; i < n; ++i) {
    float x = to(a[i]), y = to(b[i]), r = 0;
    combine(&r, &x, &y, 1, op);
    out[i] = from(r);
  }
}

template <typename T>
gloo::AllreduceOptions::Func reduce_fn(Reduce op) {
  return [op](void* o, const void* a, const void* b, size_t n) {
    combine(static_cast<T*>(o), static_cast<const T*>(a), static_cast<const T*>(b), n, op);
  };
}

template <float (*to)(uint16_t), uint16_t (*from)(float)>
gloo::AllreduceOptions::Func reduce_fn_16(Reduce op) {
  return [op](void* o, const void* a, const void* b, size_t n) {
    combine_16<to, from>(static_cast<uint16_t*>(o), static_cast<const uint16_t*>(a),
                         static_cast<const uint16_t*>(b), n, op);
  };
}

gloo::AllreduceOptions::Func reduce_function(DType dt, Reduce op) {
  switch (dt) {
    case DType::kI8:
      return reduce_fn<int8_t>(op);
    case DType::kU8:
      return reduce_fn<uint8_t>(op);
    case DType::kI32:
      return reduce_fn<int32_t>(op);
    case DType::kI64:
      return reduce_fn<int64_t>(op);
    case DType::kF32:
      return reduce_fn<float>(op);
    case DType::kF64:
      return reduce_fn<double>(op);
    case DType::kF16:
      return reduce_fn_16<f16_to_f32, f32_to_f16>(op);
    case DType::kBF16:
      return reduce_fn_16<bf16_to_f32, f32_to_bf16>(op);
    default:
      throw_unsupported(fmt::format("cpu collectives: no reduction on {}", dtype_name(dt)));
  }
}

// The mean's final division by the number of ranks (floating dtypes only: the op's verifier
// refuses mean on integers).
void divide(void* data, DType dt, int64_t n, int32_t size) {
  const double s = size;
  for (int64_t i = 0; i < n; ++i) {
    switch (dt) {
      case DType::kF32:
        static_cast<float*>(data)[i] = static_cast<float>(static_cast<float*>(data)[i] / s);
        break;
      case DType::kF64:
        static_cast<double*>(data)[i] /= s;
        break;
      case DType::kF16: {
        auto* p = static_cast<uint16_t*>(data) + i;
        *p = f32_to_f16(static_cast<float>(f16_to_f32(*p) / s));
        break;
      }
      case DType::kBF16: {
        auto* p = static_cast<uint16_t*>(data) + i;
        *p = f32_to_bf16(static_cast<float>(bf16_to_f32(*p) / s));
        break;
      }
      default:
        throw_internal_error("cpu collectives: mean on an integer dtype");
    }
  }
}

std::mutex& world_mutex() {
  static std::mutex m;
  return m;
}
std::weak_ptr<GlooComm>& world_slot() {
  static std::weak_ptr<GlooComm> w;
  return w;
}

// Each channel this process opens gets its own key prefix, so a second channel on the same
// folder never reads the first one's addresses (every rank opens channels in the same order).
int next_generation() {
  static int n = 0;
  std::lock_guard<std::mutex> lock(world_mutex());
  return n++;
}

constexpr uint64_t kP2PSlotBase = uint64_t{1} << 40;

}  // namespace

struct GlooComm::PendingSend {
  std::vector<uint8_t> bytes;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
};

std::shared_ptr<GlooComm> GlooComm::open(const ChannelOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    throw_user_error(fmt::format("cpu collectives: rank {} is not within a world of {} ranks",
                                 options.rank, options.world_size));
  const sdk::Rendezvous e = parse_gloo_rendezvous(options.rendezvous);
  if (e.transport == "ibverbs") refuse_ibverbs();
  if (e.transport != "tcp")
    throw_user_error(
        fmt::format("cpu collectives: transport \"{}\" is not known (tcp, ibverbs)", e.transport));
  std::shared_ptr<GlooComm> c(new GlooComm());
  c->rank_ = options.rank;
  c->size_ = options.world_size;
  c->timeout_ms_ = static_cast<int64_t>(e.timeout_s * 1000);
  const std::string prefix = fmt::format("rlx.world.{}", next_generation());
  try {
    std::error_code ec;
    fs::create_directories(e.folder, ec);
    gloo::transport::tcp::attr attr;
    attr.hostname = e.host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(c->rank_, c->size_);
    context->setTimeout(std::chrono::milliseconds(c->timeout_ms_));
    gloo::rendezvous::FileStore store(e.folder.string());
    gloo::rendezvous::PrefixStore prefixed(prefix, store);
    context->connectFullMesh(prefixed, device);
    // No rank leaves the rendezvous before every rank has connected: one that went on and
    // failed at once (a graph built for another world size) closed its sockets while a peer's
    // handshake with it was still open, and that peer reported a lost connection instead of
    // the real error.
    if (c->size_ > 1) {
      gloo::BarrierOptions opts(context);
      opts.setTimeout(std::chrono::milliseconds(c->timeout_ms_));
      gloo::barrier(opts);
    }
    c->context_ = std::move(context);
    c->folder_ = e.folder.string();
    c->prefix_ = prefix;
    c->device_ = device;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& ex) {
    throw_device_error(fmt::format(
        "rank {} of {}: cannot connect to the other ranks through {} within {} s: {}. Every rank "
        "must start with the same world size and rendezvous folder; a rank that never started "
        "or exited early leaves the others waiting until this timeout",
        c->rank_, c->size_, e.folder.string(), e.timeout_s, ex.what()));
  }
  return c;
}

GlooComm::~GlooComm() {
  // A last barrier, so no rank tears its connections down while a peer still reads from them.
  stop_worker();
  // While an error unwinds this rank, the others are not at a barrier (they wait at a collective
  // this rank will never reach): waiting here would only delay its exit, and the launcher's
  // report of it, by the barrier's timeout.
  if (!context_ || failed_ || size_ == 1 || std::uncaught_exceptions() > 0) return;
  try {
    complete_sends();
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(std::chrono::milliseconds(std::min<int64_t>(timeout_ms_, 10000)));
    gloo::barrier(opts);
  } catch (const std::exception&) {
    // A peer that is already gone has nothing left to read.
  }
}

template <typename F>
void GlooComm::guarded(const char* what, F&& f) {
  if (failed_)
    throw_device_error(
        fmt::format("rank {} of {}: {} refused: an earlier collective on this "
                    "communicator failed",
                    rank_, size_, what));
  try {
    f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    failed_ = true;
    throw_device_error(fmt::format(
        "rank {} of {}: collective {} on communicator \"{}\" failed: {}. A peer rank exited, "
        "was killed or did not reach this collective within the collective timeout ({} s); the "
        "launcher names the rank that ended first",
        rank_, size_, what, name_, e.what(), static_cast<double>(timeout_ms_) / 1000));
  }
}

void GlooComm::check_peer(const char* what, int32_t peer) const {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw_user_error(
        fmt::format("rank {} of {}: {} names rank {}, which is not another rank of "
                    "the communicator (0..{})",
                    rank_, size_, what, peer, size_ - 1));
}

void GlooComm::complete_sends() {
  if (pending_.empty()) return;
  guarded("Send", [&] {
    for (auto& p : pending_) p->buffer->waitSend(std::chrono::milliseconds(timeout_ms_));
  });
  pending_.clear();
}

void GlooComm::all_reduce(const void* in, void* out, DType dtype, int64_t count, Reduce op) {
  drain();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (in != out) std::memmove(out, in, bytes);
  reduce_in_place(out, dtype, count, op);
}

void GlooComm::reduce_in_place(void* out, DType dtype, int64_t count, Reduce op) {
  if (count == 0) return;
  guarded("AllReduce", [&] {
    if (size_ > 1) {
      gloo::AllreduceOptions opts(context_);
      opts.setTimeout(std::chrono::milliseconds(timeout_ms_));
      // Gloo segments by element size; the reduction callback knows the dtype.
      switch (dtype_size(dtype)) {
        case 1:
          opts.setOutput(static_cast<uint8_t*>(out), count);
          break;
        case 2:
          opts.setOutput(static_cast<uint16_t*>(out), count);
          break;
        case 4:
          opts.setOutput(static_cast<uint32_t*>(out), count);
          break;
        default:
          opts.setOutput(static_cast<uint64_t*>(out), count);
          break;
      }
      opts.setReduceFunction(reduce_function(dtype, op));
      gloo::allreduce(opts);
    }
  });
  if (op == Reduce::kMean) divide(out, dtype, count, size_);
}

void GlooComm::all_gather(const void* in, void* out, DType dtype, int64_t count) {
  drain();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (bytes == 0) return;
  guarded("AllGather", [&] {
    gloo::AllgatherOptions opts(context_);
    opts.setTimeout(std::chrono::milliseconds(timeout_ms_));
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes * size_);
    gloo::allgather(opts);
  });
}

// Gloo 0.5's unbound-buffer API has no reduce-scatter: the full all_reduce, then this rank's
// block (the same result; size times the traffic of a ring reduce-scatter).
void GlooComm::reduce_scatter(const void* in, void* out, DType dtype, int64_t count, Reduce op) {
  const size_t block = static_cast<size_t>(count) * dtype_size(dtype);
  std::vector<uint8_t> all(block * size_);
  all_reduce(in, all.data(), dtype, count * size_, op);
  std::memcpy(out, all.data() + block * rank_, block);
}

void GlooComm::all_to_all(const void* in, void* out, DType dtype, int64_t count) {
  drain();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype) * size_;
  if (bytes == 0) return;
  guarded("AllToAll", [&] {
    gloo::AlltoallOptions opts(context_);
    opts.setTimeout(std::chrono::milliseconds(timeout_ms_));
    opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
    opts.setOutput(static_cast<uint8_t*>(out), bytes);
    gloo::alltoall(opts);
  });
}

void GlooComm::broadcast(void* buffer, DType dtype, int64_t count, int32_t root) {
  drain();
  if (root < 0 || root >= size_)
    throw_user_error(fmt::format("rank {} of {}: Broadcast from rank {}, which does not exist",
                                 rank_, size_, root));
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (bytes == 0 || size_ == 1) return;
  guarded("Broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setTimeout(std::chrono::milliseconds(timeout_ms_));
    opts.setOutput(static_cast<uint8_t*>(buffer), bytes);
    opts.setRoot(root);
    gloo::broadcast(opts);
  });
}

void GlooComm::send(const void* buffer, DType dtype, int64_t count, int32_t peer) {
  check_peer("Send", peer);
  wait_all();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  const uint64_t slot = kP2PSlotBase + sent_[peer]++;
  guarded("Send", [&] {
    auto p = std::make_unique<PendingSend>();
    p->bytes.assign(static_cast<const uint8_t*>(buffer),
                    static_cast<const uint8_t*>(buffer) + bytes);
    p->buffer = context_->createUnboundBuffer(p->bytes.data(), bytes);
    p->buffer->send(peer, slot);
    pending_.push_back(std::move(p));
  });
}

void GlooComm::recv(void* buffer, DType dtype, int64_t count, int32_t peer) {
  check_peer("Recv", peer);
  wait_all();
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  const uint64_t slot = kP2PSlotBase + received_[peer]++;
  guarded("Recv", [&] {
    auto buf = context_->createUnboundBuffer(buffer, bytes);
    buf->recv(peer, slot);
    buf->waitRecv(std::chrono::milliseconds(timeout_ms_));
  });
}

// Groups of a job's ranks (rlx/core/communicator.h) as Gloo contexts of their own: each group
// connects its members through the world's rendezvous folder under a key prefix naming the
// communicator and the group's first rank, so groups of one partition (and partitions of one
// job) never see each other's keys.
std::shared_ptr<GlooComm> GlooComm::group(const Communicator& c) {
  if (c.kind == Communicator::Kind::kWorld) return shared_from_this();
  if (!device_)
    throw_internal_error(fmt::format("communicator \"{}\" asked of a group, not of the world",
                                     c.name()));
  auto it = groups_.find(c.name());
  if (it != groups_.end()) return it->second;
  const std::vector<int32_t> ranks = c.group_of(rank_, size_);
  std::string members;
  for (int32_t r : ranks) members += (members.empty() ? "" : ", ") + std::to_string(r);
  std::shared_ptr<GlooComm> g(new GlooComm());
  g->rank_ = static_cast<int32_t>(std::find(ranks.begin(), ranks.end(), rank_) - ranks.begin());
  g->size_ = static_cast<int32_t>(ranks.size());
  g->timeout_ms_ = timeout_ms_;
  g->name_ = fmt::format("{} (world ranks {})", c.name(), members);
  if (g->size_ > 1) {
    guarded(fmt::format("opening communicator {}", g->name_).c_str(), [&] {
      auto context = std::make_shared<gloo::rendezvous::Context>(g->rank_, g->size_);
      context->setTimeout(std::chrono::milliseconds(timeout_ms_));
      gloo::rendezvous::FileStore store(folder_);
      // The group's first rank names it: every member computes the same list.
      gloo::rendezvous::PrefixStore prefixed(
          fmt::format("{}.{}.{}", prefix_, c.name(), ranks.front()), store);
      context->connectFullMesh(prefixed, device_);
      g->context_ = std::move(context);
    });
  }
  groups_[c.name()] = g;
  return g;
}

std::shared_ptr<GlooComm> world_comm(const std::string& op) {
  std::lock_guard<std::mutex> lock(world_mutex());
  std::shared_ptr<GlooComm> c = world_slot().lock();
  if (!c)
    throw_user_error(fmt::format(
        "{} needs the communicator \"world\", and this process has joined no ranks: start the "
        "ranks with `rlx run|generate|bench ... --nproc N`, under `mpirun -n N rlx ...`, or open "
        "a channel on the cpu target (Target::open_channel) before running",
        op));
  return c;
}

void set_world_comm(std::shared_ptr<GlooComm> comm) {
  std::lock_guard<std::mutex> lock(world_mutex());
  world_slot() = comm;
}

namespace {

Reduce reduce_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return Reduce::kSum;
    case ReduceOp::kProduct:
      return Reduce::kProduct;
    case ReduceOp::kMax:
      return Reduce::kMax;
    case ReduceOp::kMin:
      return Reduce::kMin;
  }
  return Reduce::kSum;
}

// The contract's Channel on host buffers; the queue is ignored (cpu work is synchronous).
class GlooChannel final : public Channel {
 public:
  explicit GlooChannel(std::shared_ptr<GlooComm> c) : c_(std::move(c)) {}
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
    c_->broadcast(b.handle, dtype, count, root);
  }
  void send(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId) override {
    c_->send(b.handle, dtype, count, peer);
  }
  void recv(const DeviceBuffer& b, DType dtype, int64_t count, int32_t peer, QueueId) override {
    c_->recv(b.handle, dtype, count, peer);
  }

 private:
  std::shared_ptr<GlooComm> c_;
};

}  // namespace

std::unique_ptr<Channel> open_gloo_channel(const ChannelOptions& options) {
  std::shared_ptr<GlooComm> c = GlooComm::open(options);
  set_world_comm(c);  // the graph's collectives run on the channel last opened
  return std::make_unique<GlooChannel>(std::move(c));
}

}  // namespace rlx::cpu
