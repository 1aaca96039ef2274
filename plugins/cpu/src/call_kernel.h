// Library calls of the cpu target: dot_general, gather, scatter, while, and the HIR ops it
// claims natively (MatMul, Linear).
#pragma once
#include <memory>
#include <vector>

#include "collective_call.h"
#include "rlx/core/lir.h"

namespace rlx::cpu {

class CpuExecutable;
class GemmCall;
class QMatMulCall;

class CallKernelRunner {
 public:
  CallKernelRunner(const lir::CallKernel& k, const lir::Program& p);
  ~CallKernelRunner();
  CallKernelRunner(CallKernelRunner&&) noexcept;
  void run(const std::vector<void*>& ptrs) const;
  // A collective that runs in the background (collective_call.h): start() instead of run().
  bool in_background() const;
  BackgroundCollective start(const std::vector<void*>& ptrs) const;
  // A GEMM whose B storage buffer is computed once from constants (fixed[storage] true) packs B
  // once (GemmCall::treat_b_as_fixed); forget_packed() when that buffer was recomputed. No-ops
  // for other calls.
  void b_may_be_fixed(const std::vector<bool>& fixed, const lir::Program& p);
  void forget_packed() const;

 private:
  lir::CallKernel k_;
  std::vector<lir::Buffer> in_, out_;
  std::vector<std::unique_ptr<CpuExecutable>> regions_;  // while: cond, body
  std::vector<bool> pass_through_;        // while: carried values the body returns unchanged
  std::unique_ptr<GemmCall> gemm_;        // float MatMul, Linear, dot_general (gemm_call.h)
  std::unique_ptr<QMatMulCall> qmatmul_;  // native:QMatMul (qmatmul.h)

  void dot_general(const std::vector<void*>& ptrs) const;
  void matmul(const std::vector<void*>& ptrs) const;
  void linear(const std::vector<void*>& ptrs) const;
  void gather(const std::vector<void*>& ptrs) const;
  void scatter(const std::vector<void*>& ptrs) const;
  void while_loop(const std::vector<void*>& ptrs) const;
  std::string where() const;
};

}  // namespace rlx::cpu
