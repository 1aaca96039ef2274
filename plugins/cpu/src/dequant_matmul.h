// The block-format ops on the cpu (core/src/ops/ops_quant.cpp), claimed natively:
// DequantMatMul y[..., N] = x[..., K] W^T with W as rows of ggml blocks (rlx/core/quant.h),
// each weight row decoded once per call; DequantizeRows decodes rows to f32.
#pragma once
#include <vector>

#include "gemm.h"
#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

Verdict claim_block_op(const NodeSignature& s);  // DequantMatMul, DequantizeRows
void run_dequantize_rows(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                         const std::vector<void*>& ptrs);
void run_dequant_matmul(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                        const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs);
// The elementwise consumers the fusion pass merged into call `k` (gemm_epilogue_fusion.h), with
// their loads bound to this run's buffers; empty when none was fused. `attr` "prologue": the
// producer of a QMatMul's activations merged into it.
GemmEpilogue fused_epilogue(const lir::CallKernel& k, const std::vector<void*>& ptrs,
                            const char* attr = "epilogue");

}  // namespace rlx::cpu
