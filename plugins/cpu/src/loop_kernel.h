// Executes LIR loop kernels. A kernel is prepared once (op names resolved, compute classes
// chosen) and then evaluated over runs of the innermost loop dim, a block of points at a time,
// so interpretation costs a few branches per block rather than per element.
#pragma once
#include <vector>

#include "rlx/core/lir.h"
#include "scalar_ops.h"

namespace rlx::cpu {

struct PreparedExpr {
  lir::Expr expr;
  Cls cls;
  Op op = Op::kAdd;
  Cls arg_cls = Cls::kF32;  // class of args[0] (compare and convert read it)
};

class LoopKernelRunner {
 public:
  LoopKernelRunner(const lir::LoopKernel& k, const lir::Program& p);
  // ptrs: base address of every program buffer (aliases already resolved).
  void run(const std::vector<void*>& ptrs) const;

 private:
  lir::LoopKernel k_;
  std::vector<PreparedExpr> exprs_;
  std::vector<DType> buffer_dtypes_;

  void run_elementwise(const std::vector<void*>& ptrs) const;
  void run_reduce(const std::vector<void*>& ptrs) const;
  // Evaluates every expr at points idx (all dims fixed but the last loop dim) for last-dim
  // indices [c0, c0 + n); results land in `slots`.
  void eval_run(const std::vector<void*>& ptrs, std::vector<int64_t>& idx, int64_t c0, int n,
                unsigned char* slots) const;
};

}  // namespace rlx::cpu
