// QConv on the cpu (core/src/ops/ops_quant.cpp), claimed natively: x rounded to u8 with the
// calibrated scale and zero (rlx/core/quantize.h), a direct convolution with exact i32
// accumulators, dequantized to f32 per output channel. It is the host's float face of the int8
// convolution the microcontroller targets run; small models, so plain loops over oneTBB.
#pragma once
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

Verdict claim_qconv(const NodeSignature& s);
void run_qconv(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
               const std::vector<lir::Buffer>& out, const std::vector<void*>& ptrs);

}  // namespace rlx::cpu
