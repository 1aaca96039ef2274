#include "hello_executable.h"

#include <cstdint>
#include <variant>

#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace hello {

HelloExecutable::HelloExecutable(const rlx::lir::Program& program, const std::string& compiler)
    : program_(program), library_(compiler, rlx::sdk::render_program(program, rlx::sdk::c_dialect())) {
  for (const rlx::lir::Kernel& kernel : program_.kernels) {
    const auto* loop = std::get_if<rlx::lir::LoopKernel>(&kernel);
    // accepts_primitive refused every library call, so reaching one is a bug in the contract.
    if (!loop)
      throw rlx::Error(rlx::ErrorKind::kInternal, "hello: the program has a library call (" +
                                                      std::get<rlx::lir::CallKernel>(kernel).callee +
                                                      ") its legality should have refused");
    kernels_.push_back(reinterpret_cast<KernelFn>(library_.symbol(rlx::sdk::kernel_symbol(*loop))));
  }
  // plan_buffers gave each temporary an offset; the renderer's C reads 64-byte aligned data.
  arena_.resize(static_cast<size_t>(program_.arena_bytes) + 64);
  table_.assign(program_.buffers.size(), nullptr);
}

void HelloExecutable::run(const std::vector<void*>& buffers) {
  char* arena = arena_.data() + (64 - reinterpret_cast<uintptr_t>(arena_.data()) % 64) % 64;
  for (const rlx::lir::Buffer& b : program_.buffers) {
    const int32_t storage = program_.storage_of(b.id);
    const rlx::lir::Buffer& s = program_.buffers[storage];
    table_[b.id] = s.kind == rlx::lir::BufferKind::kTemp ? arena + s.arena_offset
                                                        : static_cast<char*>(buffers[storage]);
  }
  for (KernelFn kernel : kernels_) kernel(table_.data());
}

}  // namespace hello
