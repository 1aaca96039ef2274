// A compiled LIR program on the cpu: prepared kernels plus one arena, allocated once, that holds
// every temporary at the offset the buffer plan gave it.
#pragma once
#include <memory>
#include <variant>
#include <vector>

#include "call_kernel.h"
#include "loop_kernel.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"

namespace rlx::cpu {

class CpuExecutable final : public Executable {
 public:
  explicit CpuExecutable(const lir::Program& p);
  // buffers[i]: memory of program buffer i for inputs, outputs and constants (a null constant
  // pointer means the program's own data).
  void run(const std::vector<void*>& buffers) override;
  // Binds program inputs and outputs by position; used for region programs (while).
  void run_positional(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const;

 private:
  lir::Program program_;
  std::vector<std::variant<LoopKernelRunner, CallKernelRunner>> kernels_;
  std::shared_ptr<void> arena_;

  void execute(std::vector<void*> ptrs) const;
};

}  // namespace rlx::cpu
