// dot_general over 8- or 16-bit integers as HVX dot products: where both operands hold the
// contracted dim last and contiguous (x [.., K] times a weight [N, K], the layout of a Linear
// layer), each output element is one call of the runtime's rlx_hvx_dot_i8 / _i16 over K
// elements, 128 bytes a step. The 32-bit sums wrap like the kernels' integer arithmetic, so an
// output of 32 bits or fewer gets the bits of the loop kernel; other products keep the loop kernel.
// i32 operands whose values all fit in i8 take the i8 path too: constants checked element by
// element, and buffers whose one writer stores an i32 conversion of an i8 value (how a MIR int8
// layer widens its operands before the product), narrowed back before the products.
#pragma once
#include <optional>
#include <string>

#include "rlx/core/lir.h"

namespace rlx::hexagon {

// The C function `void <name>(char* const* buffers)` computing `call`, or nullopt when the call
// is not of that form.
std::optional<std::string> hvx_dot_kernel(const lir::CallKernel& call, const lir::Program& program,
                                          const std::string& name);

}  // namespace rlx::hexagon
