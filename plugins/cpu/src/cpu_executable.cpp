#include "cpu_executable.h"

#include <cstdlib>

#include "rlx/core/error.h"

namespace rlx::cpu {

CpuExecutable::CpuExecutable(const lir::Program& p) : program_(p) {
  for (const auto& k : program_.kernels) {
    if (auto* l = std::get_if<lir::LoopKernel>(&k)) kernels_.emplace_back(std::in_place_type<LoopKernelRunner>, *l, program_);
    else kernels_.emplace_back(std::in_place_type<CallKernelRunner>, std::get<lir::CallKernel>(k), program_);
  }
  size_t bytes = (static_cast<size_t>(program_.arena_bytes) + 63) / 64 * 64;
  if (bytes > 0) {
    void* mem = std::aligned_alloc(64, bytes);
    if (!mem) throw_user_error("cpu: cannot allocate a " + std::to_string(bytes) + "-byte arena");
    arena_ = std::shared_ptr<void>(mem, std::free);
  }
}

void CpuExecutable::run(const std::vector<void*>& buffers) {
  if (buffers.size() != program_.buffers.size())
    throw_internal_error("cpu: run() got a buffer table of the wrong size");
  execute(buffers);
}

void CpuExecutable::execute(std::vector<void*> ptrs) const {
  ptrs.resize(program_.buffers.size(), nullptr);
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
  std::vector<void*> ptrs(program_.buffers.size(), nullptr);
  for (size_t i = 0; i < program_.inputs.size(); ++i)
    ptrs[program_.inputs[i].second] = const_cast<void*>(inputs.at(i).data());
  for (size_t i = 0; i < program_.outputs.size(); ++i)
    ptrs[program_.outputs[i].second] = const_cast<void*>(outputs.at(i).data());
  execute(ptrs);
}

}  // namespace rlx::cpu
