#include "cpu_executable.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "gemm_epilogue_fusion.h"
#include "prebuilt_kernels.h"
#include "rlx/core/error.h"

namespace rlx::cpu {

namespace {

// A profile row per kind of kernel: loop kernels by name, calls by callee, block products also
// by format and weight shape (a decoder's head and its layers are different rows).
std::string profile_name(const lir::Kernel& k, const lir::Program& p, bool per_kernel,
                         size_t index) {
  if (const auto* l = std::get_if<lir::LoopKernel>(&k)) return l->name;
  const auto& c = std::get<lir::CallKernel>(k);
  // RLX_PROFILE=kernels: calls have no index in their name; their operands' shapes tell them apart.
  if (per_kernel) {
    std::string shapes;
    for (int32_t in : c.inputs)
      if (in >= 0) shapes += fmt::format(" [{}]", fmt::join(p.buffers[in].shape, ","));
    return fmt::format("k{}_{}{}", index, c.callee, shapes);
  }
  auto q = c.attrs.find("qtype");
  if (!c.callee.ends_with("DequantMatMul") || q == c.attrs.end() || c.inputs.size() < 2)
    return c.callee;
  const auto& w = p.buffers[c.inputs[1]].shape;
  return fmt::format("{} {} [{}, {} B]", c.callee, std::get<std::string>(q->second),
                     w.empty() ? 0 : w[0], w.size() < 2 ? 0 : w[1]);
}

}  // namespace

CpuExecutable::CpuExecutable(const lir::Program& p) : CpuExecutable(p, nullptr) {}

CpuExecutable::CpuExecutable(const lir::Program& p, const KernelPlan& plan)
    : CpuExecutable(p, &plan) {}

CpuExecutable::CpuExecutable(const lir::Program& p, const KernelPlan* given) : program_(p) {
  // Before the module is built, so loop kernels merged into GEMM epilogues are never compiled.
  fuse_gemm_epilogues(program_);
  bool has_loops = std::any_of(program_.kernels.begin(), program_.kernels.end(), [](const auto& k) {
    return std::holds_alternative<lir::LoopKernel>(k);
  });
  // Kernels a loaded compiled folder brought (prebuilt_kernels.h) come first: they need no
  // compiler, so the environment's plan, which looks for one, is only chosen without them. An
  // explicit plan (tests) and RLX_CPU_KERNELS=interpret are obeyed as given.
  if (!given && has_loops && !interpretation_requested())
    module_ = KernelModule::prebuilt(program_);
  if (!module_) {
    const KernelPlan plan = given ? *given : choose_kernel_plan();
    if (plan.mode == KernelMode::kCompiled && has_loops)
      module_ = std::make_shared<const KernelModule>(program_, plan.toolchain);
  }
  for (size_t i = 0; i < program_.kernels.size(); ++i) {
    const lir::Kernel& k = program_.kernels[i];
    if (auto* l = std::get_if<lir::LoopKernel>(&k)) {
      if (module_)
        kernels_.emplace_back(std::in_place_type<CompiledLoopRunner>, *l, program_, module_, i);
      else
        kernels_.emplace_back(std::in_place_type<LoopKernelRunner>, *l, program_);
    } else {
      kernels_.emplace_back(std::in_place_type<CallKernelRunner>, std::get<lir::CallKernel>(k),
                            program_);
    }
  }
  if ((profile_ = sdk::RunProfile::from_environment("cpu")))
    for (const auto& k : program_.kernels)
      profile_names_.push_back(
          profile_name(k, program_, profile_->per_kernel(), profile_names_.size()));
  size_t bytes = (static_cast<size_t>(program_.arena_bytes) + 63) / 64 * 64;
  if (bytes > 0) {
    void* mem = std::aligned_alloc(64, bytes);
    if (!mem) throw_user_error("cpu: cannot allocate a " + std::to_string(bytes) + "-byte arena");
    arena_ = std::shared_ptr<void>(mem, std::free);
  }
  ptrs_.assign(program_.buffers.size(), nullptr);
  plan_hoisting();
  plan_background();
  std::vector<bool> fixed(program_.buffers.size(), false);
  for (const auto& [storage, offset] : fixed_storage_) fixed[storage] = true;
  for (auto& k : kernels_)
    if (auto* c = std::get_if<CallKernelRunner>(&k)) c->b_may_be_fixed(fixed, program_);
  if (!fixed_storage_.empty()) {
    std::fill(ptrs_.begin(), ptrs_.end(), nullptr);
    bind();
    run_hoisted();
  }
}

void CpuExecutable::plan_hoisting() {
  const auto& bufs = program_.buffers;
  std::vector<int> writers(bufs.size(), 0);
  for (const auto& k : program_.kernels) {
    if (auto* l = std::get_if<lir::LoopKernel>(&k))
      for (const auto& st : l->stores) ++writers[program_.storage_of(st.buffer)];
    else
      for (int32_t b : std::get<lir::CallKernel>(k).outputs) ++writers[program_.storage_of(b)];
  }
  std::vector<bool> fixed(bufs.size(), false);
  for (const auto& b : bufs) fixed[b.id] = b.kind == lir::BufferKind::kConstant;
  hoisted_.assign(program_.kernels.size(), false);
  size_t bytes = 0;
  for (size_t i = 0; i < program_.kernels.size(); ++i) {
    const auto* l = std::get_if<lir::LoopKernel>(&program_.kernels[i]);
    if (!l) continue;
    bool ok = true;
    for (const auto& e : l->exprs)
      if (e.kind == lir::ExprKind::kLoad) ok = ok && fixed[program_.storage_of(e.load.buffer)];
    for (const auto& st : l->stores) {
      int32_t s = program_.storage_of(st.buffer);
      ok = ok && bufs[s].kind == lir::BufferKind::kTemp && writers[s] == 1;
    }
    if (!ok) continue;
    hoisted_[i] = true;
    for (const auto& st : l->stores) {
      int32_t s = program_.storage_of(st.buffer);
      if (fixed[s]) continue;
      fixed[s] = true;
      fixed_storage_.emplace_back(s, bytes);
      bytes += (static_cast<size_t>(bufs[s].nbytes()) + 63) / 64 * 64;
    }
  }
  if (bytes == 0) return;
  void* mem = std::aligned_alloc(64, bytes);
  if (!mem)
    throw_user_error("cpu: cannot allocate " + std::to_string(bytes) +
                     " bytes for precomputed constants");
  fixed_ = std::shared_ptr<void>(mem, std::free);
  for (const auto& b : bufs)
    if (b.kind == lir::BufferKind::kConstant) hoisted_from_.emplace_back(b.id, nullptr);
}

void CpuExecutable::run_hoisted() const {
  for (auto& [id, data] : hoisted_from_) data = ptrs_[id];
  for (size_t i = 0; i < kernels_.size(); ++i)
    if (hoisted_[i]) std::visit([&](const auto& r) { r.run(ptrs_); }, kernels_[i]);
  for (const auto& k : kernels_)  // GEMMs packed the old values of those buffers
    if (const auto* c = std::get_if<CallKernelRunner>(&k)) c->forget_packed();
}

void CpuExecutable::run(const std::vector<void*>& buffers) {
  if (buffers.size() != program_.buffers.size())
    throw_internal_error("cpu: run() got a buffer table of the wrong size");
  std::copy(buffers.begin(), buffers.end(), ptrs_.begin());
  execute();
}

void CpuExecutable::execute() const {
  if (profile_) profile_->begin_run();
  bind();
  for (const auto& b : program_.buffers)
    if (!ptrs_[b.id] && b.numel() > 0 && b.kind != lir::BufferKind::kAlias)
      throw_internal_error("cpu: buffer " + b.name + " has no memory bound");
  bool stale = false;
  for (const auto& [id, data] : hoisted_from_) stale = stale || ptrs_[id] != data;
  if (stale) run_hoisted();
  try {
    for (size_t i = 0; i < kernels_.size(); ++i) {
      if (hoisted_[i]) continue;
      for (int32_t b : waits_[i]) started_[b].wait();
      if (background_[i])
        started_[i] = std::get<CallKernelRunner>(kernels_[i]).start(ptrs_);
      else
        run_kernel(i);
    }
    finish_background();
  } catch (...) {
    // Nothing may still write into the arena or the caller's buffers once run() has returned.
    for (BackgroundCollective& c : started_) {
      try {
        c.wait();
      } catch (...) {
      }
    }
    throw;
  }
}

void CpuExecutable::finish_background() const {
  for (BackgroundCollective& c : started_) c.wait();
}

// Which kernels wait for which background collective: the first kernel after it that reads or
// writes its result's storage (through any alias). The kernels in between run while it travels.
void CpuExecutable::plan_background() {
  const size_t n = program_.kernels.size();
  background_.assign(n, false);
  waits_.assign(n, {});
  started_.assign(n, {});
  std::vector<int32_t> owner(program_.buffers.size(), -1);  // storage -> background kernel
  std::vector<int32_t> touched;
  for (size_t i = 0; i < n; ++i) {
    touched.clear();
    if (const auto* l = std::get_if<lir::LoopKernel>(&program_.kernels[i])) {
      for (const auto& e : l->exprs)
        if (e.kind == lir::ExprKind::kLoad) touched.push_back(program_.storage_of(e.load.buffer));
      for (const auto& st : l->stores) touched.push_back(program_.storage_of(st.buffer));
    } else {
      const auto& c = std::get<lir::CallKernel>(program_.kernels[i]);
      for (int32_t b : c.inputs) touched.push_back(program_.storage_of(b));
      for (int32_t b : c.outputs) touched.push_back(program_.storage_of(b));
    }
    for (int32_t s : touched) {
      if (owner[s] < 0) continue;
      waits_[i].push_back(owner[s]);
      for (int32_t& o : owner)  // waited for: complete for every later kernel
        if (o == waits_[i].back()) o = -1;
    }
    const auto* runner = std::get_if<CallKernelRunner>(&kernels_[i]);
    if (runner && runner->in_background()) {
      background_[i] = true;
      owner[program_.storage_of(std::get<lir::CallKernel>(program_.kernels[i]).outputs[0])] =
          static_cast<int32_t>(i);
    }
  }
}

void CpuExecutable::run_kernel(size_t i) const {
  if (!profile_) return std::visit([&](const auto& r) { r.run(ptrs_); }, kernels_[i]);
  const auto start = std::chrono::steady_clock::now();
  std::visit([&](const auto& r) { r.run(ptrs_); }, kernels_[i]);
  profile_->add(profile_names_[i], std::chrono::steady_clock::now() - start);
}

// Completes the pointer table: temporaries in the arena (or their fixed memory), constants the
// caller left null, aliases.
void CpuExecutable::bind() const {
  std::vector<void*>& ptrs = ptrs_;
  for (const auto& b : program_.buffers) {
    if (b.kind == lir::BufferKind::kTemp)
      ptrs[b.id] = static_cast<char*>(arena_.get()) + b.arena_offset;
    else if (b.kind == lir::BufferKind::kConstant && !ptrs[b.id])
      ptrs[b.id] = const_cast<void*>(b.data.data());
  }
  for (const auto& [s, offset] : fixed_storage_)
    ptrs[s] = static_cast<char*>(fixed_.get()) + offset;
  for (const auto& b : program_.buffers)
    if (b.kind == lir::BufferKind::kAlias) ptrs[b.id] = ptrs[program_.storage_of(b.id)];
}

void CpuExecutable::run_positional(const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& outputs) const {
  std::fill(ptrs_.begin(), ptrs_.end(), nullptr);
  for (size_t i = 0; i < program_.inputs.size(); ++i)
    ptrs_[program_.inputs[i].second] = const_cast<void*>(inputs.at(i).data());
  for (size_t i = 0; i < program_.outputs.size(); ++i)
    ptrs_[program_.outputs[i].second] = const_cast<void*>(outputs.at(i).data());
  execute();
}

}  // namespace rlx::cpu
