// QMatMul on the cpu (core/src/ops/ops_quant.cpp), claimed natively: activations rounded to u8
// (per row at run time, or with the calibrated scale and zero), then the int8 GEMM of
// int8_gemm.h with the dequantization in its epilogue. The claim says which ISA runs it, so
// `rlx explain` shows where precision changes and how.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "gemm.h"
#include "int8_gemm.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

Verdict claim_qmatmul(const NodeSignature& s);

class QMatMulCall {
 public:
  QMatMulCall(const lir::CallKernel& k, const lir::Program& p);
  void run(const std::vector<void*>& ptrs) const;
  void forget_packed() const;

 private:
  lir::CallKernel k_;  // a copy: the runner that owns this object may move
  int64_t M_ = 0, N_ = 0, K_ = 0;
  bool weights_constant_ = false;  // w, its scales (and bias): packed once
  bool has_bias_ = false;
  int bias_ = -1;  // the bias's input index
  struct Cache {
    std::mutex mu;
    const void* source = nullptr;
    std::shared_ptr<const PackedInt8W> packed;
  };
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>();
  std::shared_ptr<const PackedInt8W> packed(const void* w, const void* scale,
                                            const void* bias) const;
};

}  // namespace rlx::cpu
