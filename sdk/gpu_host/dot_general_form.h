// Whether a dot_general is a batched matrix product with affine operands, and which: the form
// render_matmul takes. Batch, free and contracted dims collapse into one dim each when their
// memory is contiguous in the same order in both operands (size-1 dims ignored); otherwise, and
// for anything but f16/bf16/f32 or an empty dim, the call keeps the per-output loop kernel.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

struct MatmulCall {
  sdk::MatmulShape shape;
  std::vector<int32_t> buffers;  // storage ids at the shape's buffer positions
};

std::optional<MatmulCall> matmul_form(const lir::CallKernel& call, const lir::Program& program,
                                      const std::string& name);

// Row-major element strides of `shape`.
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);
// Whether `strides` walk `domain` as `expected` do; a size-1 dim's stride does not matter.
bool same_walk(const std::vector<int64_t>& domain, const std::vector<int64_t>& strides,
               const std::vector<int64_t>& expected);

// The dims of a rank-`rank` operand that are neither batch nor contracted, ascending.
IntList free_dims(size_t rank, const IntList& batch, const IntList& contract);

// The loop dims of a dot_general: the output's (batch, lhs free, rhs free, in output order), then
// the contracted ones, each as {size, element stride in lhs, in rhs} (0 where the operand lacks
// the dim), over row-major operands.
struct ProductDims {
  std::vector<std::array<int64_t, 3>> dims;
  size_t parallel = 0;  // dims [0, parallel) are the output's
};
ProductDims product_dims(const lir::CallKernel& call, const lir::Program& program);

// dot_general as a loop kernel: parallel dims (batch, lhs free, rhs free) in output order, then
// the contracted dims reduced by sum. Operands are read in the compute type of the output
// (f32 for f16/bf16/f32, f64, i64 for integers) and the sum is stored with one rounding, as the
// cpu target computes it.
lir::LoopKernel dot_general_kernel(const lir::CallKernel& call, const lir::Program& program,
                                   const std::string& name);

}  // namespace rlx::gpu_host
