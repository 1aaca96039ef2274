#include "cpu_executable.h"

#include <algorithm>
#include <cstdlib>

#include "rlx/core/error.h"

namespace rlx::cpu {

CpuExecutable::CpuExecutable(const lir::Program& p) : CpuExecutable(p, choose_kernel_plan()) {}

CpuExecutable::CpuExecutable(const lir::Program& p, const KernelPlan& plan) : program_(p) {
  bool has_loops = std::any_of(program_.kernels.begin(), program_.kernels.end(), [](const auto& k) {
    return std::holds_alternative<lir::LoopKernel>(k);
  });
  if (plan.mode == KernelMode::kCompiled && has_loops)
    module_ = std::make_shared<const KernelModule>(program_, plan.toolchain);
  for (size_t i = 0; i < program_.kernels.size(); ++i) {
    const lir::Kernel& k = program_.kernels[i];
    if (auto* l = std::get_if<lir::LoopKernel>(&k)) {
      if (module_) kernels_.emplace_back(std::in_place_type<CompiledLoopRunner>, *l, program_, module_, i);
      else kernels_.emplace_back(std::in_place_type<LoopKernelRunner>, *l, program_);
    } else {
      kernels_.emplace_back(std::in_place_type<CallKernelRunner>, std::get<lir::CallKernel>(k), program_);
    }
  }
  size_t bytes = (static_cast<size_t>(program_.arena_bytes) + 63) / 64 * 64;
  if (bytes > 0) {
    void* mem = std::aligned_alloc(64, bytes);
    if (!mem) throw_user_error("cpu: cannot allocate a " + std::to_string(bytes) + "-byte arena");
    arena_ = std::shared_ptr<void>(mem, std::free);
  }
  ptrs_.assign(program_.buffers.size(), nullptr);
}

void CpuExecutable::run(const std::vector<void*>& buffers) {
  if (buffers.size() != program_.buffers.size())
    throw_internal_error("cpu: run() got a buffer table of the wrong size");
  std::copy(buffers.begin(), buffers.end(), ptrs_.begin());
  execute();
}

void CpuExecutable::execute() const {
  std::vector<void*>& ptrs = ptrs_;
  for (const auto& b : program_.buffers) {
    if (b.kind == lir::BufferKind::kTemp)
      ptrs[b.id] = static_cast<char*>(arena_.get()) + b.arena_offset;
    else if (b.kind == lir::BufferKind::kConstant && !ptrs[b.id])
      ptrs[b.id] = const_cast<void*>(b.data.data());
  }
  for (const auto& b : program_.buffers)
    if (b.kind == lir::BufferKind::kAlias) ptrs[b.id] = ptrs[program_.storage_of(b.id)];
  for (const auto& b : program_.buffers)
    if (!ptrs[b.id] && b.numel() > 0 && b.kind != lir::BufferKind::kAlias)
      throw_internal_error("cpu: buffer " + b.name + " has no memory bound");
  for (const auto& k : kernels_) std::visit([&](const auto& r) { r.run(ptrs); }, k);
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
