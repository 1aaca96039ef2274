// A compiled LIR program on the cpu: prepared kernels plus one arena, allocated once, that holds
// every temporary at the offset the buffer plan gave it. Loop kernels run as generated native
// code (codegen_module.h) or interpreted (loop_kernel.h), as the KernelPlan says; a run allocates
// nothing of its own. An executable runs one call at a time.
//
// Loop kernels whose inputs are all constants (weight dtype conversions, mostly) compute the same
// thing every run: they run once, when the executable is built, into memory of their own, and
// are skipped afterwards; again only if a run binds different constant data.
#pragma once
#include <memory>
#include <variant>
#include <vector>

#include "call_kernel.h"
#include "codegen_module.h"
#include "codegen_toolchain.h"
#include "loop_kernel.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"
#include "rlx/core/tensor.h"
#include "rlx/sdk/run_profile.h"

namespace rlx::cpu {

class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const lir::Program& p, const KernelPlan& plan);
  // With prebuilt kernels of a loaded compiled folder when they fit (prebuilt_kernels.h), else
  // with the plan the environment chooses now. Also for region programs of while loops.
  explicit CpuExecutable(const lir::Program& p);
  // buffers[i]: memory of program buffer i for inputs, outputs and constants (a null constant
  // pointer means the program's own data).
  void run(const std::vector<void*>& buffers) override;
  // Binds program inputs and outputs by position; used for region programs (while).
  void run_positional(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const;

  // The generated code, or null when loop kernels are interpreted (or there are none).
  const KernelModule* module() const { return module_.get(); }

 private:
  // `given` null: prebuilt kernels when registered, else the plan the environment chooses.
  CpuExecutable(const lir::Program& p, const KernelPlan* given);

  lir::Program program_;
  std::shared_ptr<const KernelModule> module_;
  std::vector<std::variant<LoopKernelRunner, CompiledLoopRunner, CallKernelRunner>> kernels_;
  std::shared_ptr<void> arena_;
  mutable std::vector<void*> ptrs_;  // per-run pointer table, sized once

  // Kernels that run once (see above), the storage buffers they fill, that memory, and the
  // constant data they were computed from.
  std::vector<bool> hoisted_;
  std::vector<std::pair<int32_t, size_t>> fixed_storage_;  // storage buffer -> offset in fixed_
  std::shared_ptr<void> fixed_;
  mutable std::vector<std::pair<int32_t, const void*>> hoisted_from_;

  // Collectives running in the background (collective_call.h): whether kernel i is one, the
  // background kernels whose result kernel i must wait for, and those started in this run.
  std::vector<bool> background_;
  std::vector<std::vector<int32_t>> waits_;
  mutable std::vector<BackgroundCollective> started_;

  // RLX_PROFILE's rows (rlx/sdk/run_profile.h), one name per kernel; null when off.
  std::unique_ptr<sdk::RunProfile> profile_;
  std::vector<std::string> profile_names_;

  void plan_hoisting();
  void plan_background();
  void finish_background() const;
  void run_kernel(size_t i) const;
  void bind() const;
  void run_hoisted() const;
  void execute() const;
};

}  // namespace rlx::cpu
