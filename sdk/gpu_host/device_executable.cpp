#include "device_executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "host_collective.h"
#include "rlx/core/error.h"
#include "rlx/core/progress.h"

namespace rlx::gpu_host {

OwnedBuffer::OwnedBuffer(DeviceApi& api, size_t bytes) : api_(api) {
  // Zero-size tensors still get an allocation: device APIs refuse empty buffers, and a kernel
  // parameter must name something.
  buffer_ = api_.allocate(std::max<size_t>(bytes, 16));
  buffer_.bytes = bytes;
}

OwnedBuffer::~OwnedBuffer() {
  api_.release(buffer_);
}

// One program (the top level, or a while region) on the device. Inputs and outputs are bound
// by the caller on each execute(); constants and temporaries are owned here.
class ProgramOnDevice {
 public:
  ProgramOnDevice(DeviceApi& api, const lir::Program& p, sdk::RunProfile* profile)
      : api_(api), p_(p), plan_(plan_module(p, api.library())), profile_(profile) {
    {
      progress::Task task(fmt::format("{}: building the kernels", api_.target_name()));
      module_ = api_.build(plan_.source);
    }
    own_.resize(p_.buffers.size());
    read_.assign(p_.buffers.size(), false);
    for (const lir::Kernel& k : p_.kernels) {
      if (const auto* l = std::get_if<lir::LoopKernel>(&k)) {
        for (const lir::Expr& e : l->exprs)
          if (e.kind == lir::ExprKind::kLoad) read_[p_.storage_of(e.load.buffer)] = true;
      } else {
        for (int32_t b : std::get<lir::CallKernel>(k).inputs) read_[p_.storage_of(b)] = true;
      }
    }
    // Temporaries come from the buffer plan's arena: temps the plan put at one arena offset have
    // disjoint lifetimes, so they share one device buffer (as large as the largest of them).
    // (The module plan's offsets where fused kernels changed lifetimes: module_plan.h.)
    auto offset = [&](const lir::Buffer& b) {
      return plan_.arena_offsets.empty() ? b.arena_offset : plan_.arena_offsets[b.id];
    };
    std::map<int64_t, size_t> slot_bytes;
    for (const lir::Buffer& b : p_.buffers)
      if (b.kind == lir::BufferKind::kTemp && offset(b) >= 0)
        slot_bytes[offset(b)] = std::max(slot_bytes[offset(b)], static_cast<size_t>(b.nbytes()));
    std::map<int64_t, std::shared_ptr<OwnedBuffer>> slots;
    for (const lir::Buffer& b : p_.buffers) {
      if (b.kind == lir::BufferKind::kTemp && offset(b) >= 0) {
        std::shared_ptr<OwnedBuffer>& slot = slots[offset(b)];
        if (!slot) slot = std::make_shared<OwnedBuffer>(api_, slot_bytes[offset(b)]);
        own_[b.id] = slot;
        continue;
      }
      if (b.kind != lir::BufferKind::kTemp && b.kind != lir::BufferKind::kConstant) continue;
      own_[b.id] = std::make_shared<OwnedBuffer>(api_, static_cast<size_t>(b.nbytes()));
      if (b.kind == lir::BufferKind::kConstant && b.nbytes() > 0)
        api_.upload(own_[b.id]->get(), b.data.data(), static_cast<size_t>(b.nbytes()));
    }
    if (!plan_.checks.empty()) {
      status_ = std::make_unique<OwnedBuffer>(api_, plan_.checks.size() * 4 * sizeof(int32_t));
      zeros_.assign(plan_.checks.size() * 4, 0);
    }
    size_t scratch = 0;
    for (const Step& s : plan_.steps) {
      if (auto* l = std::get_if<Launch>(&s))
        scratch = std::max(scratch, static_cast<size_t>(l->scratch_bytes));
      if (auto* w = std::get_if<HostWhile>(&s))
        loops_.push_back(std::make_unique<Loop>(api_, *this, *w));
      if (auto* m = std::get_if<LibraryMatmul>(&s))
        vendor_.push_back(api_.prepare_matmul(m->shape, {m->bias >= 0, m->residual >= 0}));
      if (auto* c = std::get_if<LibraryCall>(&s)) {
        const auto& call = std::get<lir::CallKernel>(p_.kernels.at(c->kernel));
        calls_.push_back(host_staged(call.attrs) ? plan_host_collective(api_, call, p_)
                                                 : api_.prepare_call(call, p_));
      }
    }
    if (scratch > 0) {
      scratch_ = std::make_unique<OwnedBuffer>(api_, scratch);
      api_.zero(scratch_->get(), scratch);
    }
    run_once_launches();
  }

  // Whether a run is only device work (no host control flow, no per-launch timing), so the device
  // may record it once and replay it (DeviceApi::begin_recording).
  bool recordable() const {
    return loops_.empty() && !profile_ &&
           std::all_of(calls_.begin(), calls_.end(), [](const auto& c) { return c->recordable(); });
  }

  const lir::Program& program() const { return p_; }
  // Whether any kernel reads storage buffer `id` (an input no kernel reads is not uploaded: a
  // graph may take an input only one of its programs uses).
  bool reads(int32_t id) const { return read_.at(id); }

  // bound[id]: the device buffer of input/output `id`; other entries are ignored.
  void execute(const std::vector<const DeviceBuffer*>& bound) {
    enqueue(bound);
    check_status();
  }

  // Reports the first bad index a kernel of the last run found.
  void check_status() {
    if (status_) check_indices();
    if (calls_.empty()) return;
    api_.finish();
    for (auto& c : calls_) c->check();
  }

  // The device work of execute() without the index check that reads the status back: what a
  // recording holds.
  void enqueue(const std::vector<const DeviceBuffer*>& bound) {
    std::vector<const DeviceBuffer*> at(p_.buffers.size(), nullptr);
    for (const lir::Buffer& b : p_.buffers) {
      if (own_[b.id])
        at[b.id] = &own_[b.id]->get();
      else if (b.kind == lir::BufferKind::kInput || b.kind == lir::BufferKind::kOutput)
        at[b.id] = bound.at(b.id);
    }
    if (status_) api_.zero(status_->get(), zeros_.size() * sizeof(int32_t));
    size_t loop = 0, vendor = 0, call = 0;
    for (const Step& s : plan_.steps) {
      if (std::holds_alternative<HostWhile>(s)) {
        loops_[loop++]->run(at);
        continue;
      }
      if (const auto* m = std::get_if<LibraryMatmul>(&s)) {
        auto operand = [&](int32_t position) { return need(at, m->buffers.at(position)); };
        VendorOperands add;
        if (m->bias >= 0) add.bias = need(at, m->bias);
        if (m->residual >= 0) add.residual = need(at, m->residual);
        // A profile row per vendor and shape: products of one name differ by orders of magnitude.
        const std::string what =
            profile_ ? fmt::format("{} {} {}x{}x{}{}", m->shape.name, m->vendor, m->shape.m,
                                   m->shape.n, m->shape.k,
                                   m->shape.batch > 1 ? fmt::format(" (batch {})", m->shape.batch)
                                                      : std::string())
                     : std::string();
        timed(what, [&] {
          vendor_[vendor]->run(*operand(m->shape.a_buffer), *operand(m->shape.b_buffer),
                               *operand(m->shape.c_buffer), add);
        });
        ++vendor;
        continue;
      }
      if (const auto* c = std::get_if<LibraryCall>(&s)) {
        std::vector<const DeviceBuffer*> operands;
        for (int32_t b : c->buffers) operands.push_back(need(at, b));
        const auto& kernel = std::get<lir::CallKernel>(p_.kernels[c->kernel]);
        timed(profile_ ? fmt::format("{} {}", kernel.callee.substr(kernel.callee.find(':') + 1),
                                     c->vendor)
                       : std::string(),
              [&] { calls_[call]->run(operands); });
        ++call;
        continue;
      }
      const Launch& l = std::get<Launch>(s);
      if (l.once) continue;
      for (auto [src, dst] : l.copies_before) {
        const DeviceBuffer *from = need(at, src), *to = need(at, dst);
        // One buffer when the caller updates a scatter's operand in place (the runtime's
        // in_place.h): nothing to copy, and APIs forbid overlapping copies.
        if (from->handle != to->handle)
          api_.copy(*from, *to, static_cast<size_t>(p_.buffers[src].nbytes()));
      }
      if (l.work_items == 0) continue;
      std::vector<const DeviceBuffer*> args;
      for (int32_t b : l.buffers) args.push_back(need(at, b));
      if (l.status_slot >= 0) args.push_back(&status_->get());
      if (l.scratch_bytes > 0) args.push_back(&scratch_->get());
      timed(l.symbol, [&] { api_.launch(*module_, l.symbol, args, l.work_items); });
    }
    read_stamps();
  }

  void check_indices() {
    std::vector<int32_t> st(zeros_.size());
    api_.download(status_->get(), st.data(), st.size() * sizeof(int32_t));
    for (size_t s = 0; s < plan_.checks.size(); ++s) {
      if (!st[s * 4]) continue;
      uint64_t bits = (static_cast<uint64_t>(static_cast<uint32_t>(st[s * 4 + 3])) << 32) |
                      static_cast<uint32_t>(st[s * 4 + 2]);
      throw_index_error(plan_.checks[s].where, static_cast<int64_t>(bits), st[s * 4 + 1],
                        plan_.checks[s].axis_size);
    }
  }

 private:
  // A while loop: carried values double-buffered on the device.
  class Loop {
   public:
    Loop(DeviceApi& api, const ProgramOnDevice& parent, HostWhile w)
        : api_(api), call_(std::get<lir::CallKernel>(parent.p_.kernels.at(w.kernel))) {
      if (call_.regions.size() != 2)
        throw_internal_error(fmt::format("{}: while has {} regions, not 2", api_.target_name(),
                                         call_.regions.size()));
      cond_ = std::make_unique<ProgramOnDevice>(api_, *call_.regions[0], parent.profile_);
      body_ = std::make_unique<ProgramOnDevice>(api_, *call_.regions[1], parent.profile_);
      for (int32_t b : call_.inputs) {
        size_t n = static_cast<size_t>(parent.p_.buffers[b].nbytes());
        bytes_.push_back(n);
        state_.push_back(std::make_unique<OwnedBuffer>(api_, n));
        next_.push_back(std::make_unique<OwnedBuffer>(api_, n));
      }
      pred_ = std::make_unique<OwnedBuffer>(api_, 1);
    }

    void run(const std::vector<const DeviceBuffer*>& at) {
      for (size_t i = 0; i < call_.inputs.size(); ++i)
        if (bytes_[i]) api_.copy(*at.at(call_.inputs[i]), state_[i]->get(), bytes_[i]);
      for (;;) {
        cond_->execute(bind(*cond_, state_, {&pred_->get()}));
        uint8_t go = 0;
        api_.download(pred_->get(), &go, 1);
        if (!go) break;
        std::vector<const DeviceBuffer*> outs;
        for (auto& n : next_) outs.push_back(&n->get());
        body_->execute(bind(*body_, state_, outs));
        std::swap(state_, next_);
      }
      for (size_t i = 0; i < call_.outputs.size(); ++i)
        if (bytes_[i]) api_.copy(state_[i]->get(), *at.at(call_.outputs[i]), bytes_[i]);
    }

   private:
    DeviceApi& api_;
    const lir::CallKernel& call_;
    std::unique_ptr<ProgramOnDevice> cond_, body_;
    std::vector<size_t> bytes_;
    std::vector<std::unique_ptr<OwnedBuffer>> state_, next_;
    std::unique_ptr<OwnedBuffer> pred_;

    // Regions bind their inputs and outputs by position.
    static std::vector<const DeviceBuffer*> bind(
        const ProgramOnDevice& r, const std::vector<std::unique_ptr<OwnedBuffer>>& in,
        const std::vector<const DeviceBuffer*>& out) {
      const lir::Program& p = r.program();
      std::vector<const DeviceBuffer*> at(p.buffers.size(), nullptr);
      for (size_t i = 0; i < p.inputs.size(); ++i) at[p.inputs[i].second] = &in.at(i)->get();
      for (size_t i = 0; i < p.outputs.size(); ++i) at[p.outputs[i].second] = out.at(i);
      return at;
    }
  };

  DeviceApi& api_;
  const lir::Program& p_;
  ModulePlan plan_;
  sdk::RunProfile* profile_;  // RLX_PROFILE's, owned by the executable; nullptr when off
  std::unique_ptr<Module> module_;
  std::vector<std::shared_ptr<OwnedBuffer>> own_;  // temps of one arena slot share theirs
  std::vector<bool> read_;                         // by storage id: some kernel reads it
  std::unique_ptr<OwnedBuffer> status_;
  std::unique_ptr<OwnedBuffer> scratch_;  // Launch::scratch_bytes: shared by the launches
  std::vector<int32_t> zeros_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::unique_ptr<VendorMatmul>> vendor_;  // one per LibraryMatmul step, in order
  std::vector<std::unique_ptr<VendorCall>> calls_;     // one per LibraryCall step, in order

  // The launches that compute the same values on every run (once_launches.h), run now into
  // buffers of their own: the arena slots their outputs had are shared with temporaries that
  // every run overwrites.
  void run_once_launches() {
    std::vector<const DeviceBuffer*> at(p_.buffers.size(), nullptr);
    bool any = false;
    for (const Step& s : plan_.steps) {
      const auto* l = std::get_if<Launch>(&s);
      if (!l || !l->once) continue;
      if (!any) {
        for (const lir::Buffer& b : p_.buffers)
          if (own_[b.id]) at[b.id] = &own_[b.id]->get();
        any = true;
      }
      for (int32_t w : l->writes) {
        own_[w] = std::make_shared<OwnedBuffer>(api_, static_cast<size_t>(p_.buffers[w].nbytes()));
        at[w] = &own_[w]->get();
      }
      std::vector<const DeviceBuffer*> args;
      for (int32_t b : l->buffers) args.push_back(need(at, b));
      api_.launch(*module_, l->symbol, args, l->work_items);
    }
    if (any) api_.finish();
  }

  const DeviceBuffer* need(const std::vector<const DeviceBuffer*>& at, int32_t id) const {
    const DeviceBuffer* b = at.at(p_.storage_of(id));
    if (!b)
      throw_internal_error(fmt::format("{}: buffer {} has no device memory bound",
                                       api_.target_name(), p_.buffers[id].name));
    return b;
  }

  // Under RLX_PROFILE with a device clock: a pair of stamps per timed step of a run, kept from
  // run to run, and the names of the steps timed so far in this run.
  std::vector<std::pair<std::unique_ptr<DeviceStamp>, std::unique_ptr<DeviceStamp>>> stamps_;
  std::vector<std::string> stamped_;
  bool host_clock_ = false;  // the device has no clock of its own

  // Runs `work` (one launch or vendor product), timed on its own under RLX_PROFILE: between two
  // device stamps (read at the end of the run) or, without them, until it has finished.
  template <typename Work>
  void timed(const std::string& name, Work work) {
    if (!profile_) {
      work();
      return;
    }
    if (!host_clock_ && stamped_.size() == stamps_.size()) {
      auto first = api_.make_stamp();
      if (first) {
        stamps_.emplace_back(std::move(first), api_.make_stamp());
        profile_->note_device_clock();
      } else {
        host_clock_ = true;
      }
    }
    if (host_clock_) {
      auto start = std::chrono::steady_clock::now();
      work();
      api_.finish();
      profile_->add(name, std::chrono::steady_clock::now() - start);
      return;
    }
    auto& [before, after] = stamps_[stamped_.size()];
    before->record();
    work();
    after->record();
    stamped_.push_back(name);
  }

  void read_stamps() {
    if (stamped_.empty()) return;
    api_.finish();
    for (size_t i = 0; i < stamped_.size(); ++i) {
      const std::chrono::duration<double, std::milli> ms(
          stamps_[i].second->ms_since(*stamps_[i].first));
      profile_->add(stamped_[i], std::chrono::duration_cast<std::chrono::steady_clock::duration>(ms));
    }
    stamped_.clear();
  }
};

DeviceExecutable::DeviceExecutable(std::shared_ptr<DeviceApi> api, const lir::Program& program)
    : api_(std::move(api)), profile_(sdk::RunProfile::from_environment(api_->target_name())) {
  keep_ = std::make_shared<const lir::Program>(program);
  program_ = std::make_unique<ProgramOnDevice>(*api_, *keep_, profile_.get());
}

DeviceExecutable::~DeviceExecutable() = default;

void DeviceExecutable::run(const std::vector<void*>& host) {
  std::vector<BufferBinding> bound(host.size());
  for (size_t i = 0; i < host.size(); ++i) bound[i].host = host[i];
  run_bound(bound, 0);
}

void DeviceExecutable::run_bound(const std::vector<BufferBinding>& given, QueueId) {
  const lir::Program& p = program_->program();
  if (given.size() != p.buffers.size())
    throw_internal_error(
        fmt::format("{}: run() got a buffer table of the wrong size", api_->target_name()));
  if (io_.empty()) io_.resize(p.buffers.size());
  if (profile_) profile_->begin_run();
  std::vector<const DeviceBuffer*> bound(p.buffers.size(), nullptr);
  for (const lir::Buffer& b : p.buffers) {
    if (b.kind != lir::BufferKind::kInput && b.kind != lir::BufferKind::kOutput) continue;
    const size_t bytes = static_cast<size_t>(b.nbytes());
    if (given[b.id].device.valid()) {
      if (given[b.id].device.bytes < bytes)
        throw_internal_error(
            fmt::format("{}: the device buffer bound to {} has {} bytes, it needs {}",
                        api_->target_name(), b.name, given[b.id].device.bytes, bytes));
      bound[b.id] = &given[b.id].device;
      continue;
    }
    if (!io_[b.id]) io_[b.id] = std::make_unique<OwnedBuffer>(*api_, bytes);
    bound[b.id] = &io_[b.id]->get();
    if (b.kind == lir::BufferKind::kInput && bytes > 0 && program_->reads(p.storage_of(b.id))) {
      if (!given[b.id].host)
        throw_internal_error(
            fmt::format("{}: input {} has no host memory", api_->target_name(), b.name));
      api_->upload(io_[b.id]->get(), given[b.id].host, bytes);
    }
  }
  if (api_->can_record() && program_->recordable()) {
    // The launches are recorded once per set of bound buffers and replayed: one call instead of
    // one per kernel. A caller's device tensors at new addresses make a new recording.
    RecordingCache::Key key;
    for (const DeviceBuffer* b : bound) key.push_back(b ? b->handle : nullptr);
    RecordedWork* work = recorded_.find(key);
    if (!work) {
      api_->begin_recording();
      try {
        program_->enqueue(bound);
      } catch (...) {
        api_->end_recording();
        throw;
      }
      work = &recorded_.add(std::move(key), api_->end_recording());
    }
    api_->replay(*work);
    program_->check_status();
  } else {
    program_->execute(bound);
  }
  for (auto& [name, id] : p.outputs) {
    const size_t bytes = static_cast<size_t>(p.buffers[id].nbytes());
    if (given[id].device.valid() || bytes == 0) continue;
    api_->download(io_[id]->get(), given[id].host, bytes);
  }
}

}  // namespace rlx::gpu_host
