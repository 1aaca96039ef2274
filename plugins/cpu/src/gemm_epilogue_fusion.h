// Fusing elementwise consumers into GEMM call kernels (bias add, GELU, residual add, any chain
// of the ops an epilogue supports), so the tile of C is finished while it is still in cache and
// the GEMM result is never written to and read back from memory.
//
// A call kernel (native:MatMul, native:Linear, dot_general, native:DequantMatMul) with an f32
// result G is merged with
// the loop kernel L that consumes G when:
//  * L is the only kernel that reads G (through any alias) and G is not a program output;
//  * L is elementwise (no reduction), f32 throughout, over G's shape, with one store whose
//    buffer has G's shape and does not share storage with the GEMM's operands;
//  * L reads G at the same element it writes (identity map), every other load is f32 and
//    indexes (row, column) of G affinely (a per-column bias, a same-shape residual, a scalar),
//    and L uses only the ops GemmEpilogue has (neg abs exp tanh erf sqrt rsqrt logistic add sub
//    mul div max min, constants).
// The merged call takes L's place in the kernel order (every input of both is ready there),
// writes L's output, and carries L's expression in the attribute "epilogue" (text below) with
// its extra operands appended to the inputs ("epilogue_inputs_from" = the first such input).
// Buffer lifetimes are recomputed and the arena re-planned.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "gemm.h"
#include "rlx/core/lir.h"

namespace rlx::cpu {

// Rewrites `p` in place; returns how many loop kernels were merged. First the head transposes
// around native Attention fold into it (attention_layout_fusion.h), then the producers of
// QMatMul activations become prologues (the QMatMul case above, the other way round), then the
// epilogues. Regions (while bodies) are left alone.
int fuse_gemm_epilogues(lir::Program& p);

// The epilogue attribute: steps separated by ';', step s defining register s:
//   acc | const <value> | load <input> <offset> <row stride> <col stride> | <op> <a> [<b>]
// <input> indexes the call kernel's inputs; strides and offset count f32 elements.
// decode_epilogue appends the steps to `ep`; a bare `acc` step is replaced by register
// `acc_reg` when acc_reg >= 0 (Linear's biased result). on_load gets each load's operand.
void decode_epilogue(const std::string& text, int acc_reg, GemmEpilogue& ep,
                     const std::function<void(int32_t input, int64_t offset, int64_t rs,
                                              int64_t cs)>& on_load);

}  // namespace rlx::cpu
