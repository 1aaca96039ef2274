// What a kernel computes itself instead of reading it from a kernel of its own (module_plan.cpp's
// planning): a single-row product's A, and a scatter's updates.
//
// A norm inside the product after it: a decode
// step's input and post-attention norms each feed one single-row product (q|k|v, gate|up, the
// vocabulary head), and a norm of one row is a launch of its own that costs about what a small
// product does (3.9 us on an H100 for a row of 1024; bench/RESULTS.md). The product's kernel
// reads the norm's input, computes the row's statistics as the norm would, and multiplies the
// normalised elements, rounded to the norm's output dtype: the same values, one launch fewer.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "device_api.h"
#include "dot_general_form.h"
#include "norm_form.h"
#include "rlx/sdk/render.h"

namespace rlx::gpu_host {

// Renders a loop kernel over storage ids numbered by position (module_plan's
// positional_program).
using PositionalKernel =
    std::function<lir::Program(const lir::LoopKernel&, const std::vector<int32_t>&)>;

// A kernel's storage buffers (`buffers`, by position) with the operand at `position` computed by
// `producer` instead of read: the operand's position binds the first buffer the producer reads
// that the kernel does not already bind (f16, bf16 or f32: operand_dtype), the producer's other
// new buffers are appended, and the prologue is over them. nullopt when the producer reads the
// operand, reads no new buffer, or its first read is one the kernel binds already. With `norm`
// (a norm whose output only the producer reads), the prologue also computes that norm where the
// producer loads its output (sdk::NormedRead: the norm's x, scale and bias are bound instead).
struct BoundPrologue {
  std::vector<int32_t> buffers;
  DType operand_dtype = DType::kF32;
  std::shared_ptr<const sdk::OperandPrologue> prologue;
};
std::optional<BoundPrologue> bind_operand_prologue(const lir::LoopKernel& producer,
                                                   const lir::Program& p,
                                                   std::vector<int32_t> buffers, int32_t position,
                                                   const PositionalKernel& positional,
                                                   const NormCall* norm);

// The index of the only kernel that reads loop kernel `i`'s single output, when that output is
// not a graph output (`readers`: readers per storage buffer) and no kernel between the two writes
// what kernel `i` reads (so it may be computed where it is read); else nullopt.
std::optional<size_t> sole_reader_after(const lir::Program& p, size_t i,
                                        const std::vector<int>& readers);

// The loop kernel from index `from` on that is the only reader of norm `n`'s output (not a graph
// output), when no kernel before it writes what the norm reads: the norm may run right before
// it instead, or inside what computes that kernel (bind_operand_prologue's `norm`).
std::optional<size_t> sole_loop_reader(const NormCall& n, size_t from, const lir::Program& p,
                                       const std::vector<int>& readers);

// `mm` reading the norm's input instead of its output, with the norm as its prologue, when the
// shapes fit: a single-row product (m == 1) over A contiguous along k, k the norm's row length,
// one product row per norm row, A the norm's output (`out_dtype`, after any convert taken into
// the norm) and x read as plain rows; else nullopt. An epilogue already fused into `mm` (the
// convert after AMP's vocabulary head) stays, scale and bias bound after its parameters.
// `norm_buffers` are the norm's storage buffers at `norm`'s positions.
std::optional<MatmulCall> with_norm_prologue(const MatmulCall& mm, const sdk::NormShape& norm,
                                             const std::vector<int32_t>& norm_buffers,
                                             DType out_dtype);

// An elementwise loop kernel inside the product after it: SiLU(gate) x up, which only the down
// projection reads, is computed where that GEMV reads A (one launch and A's round trip fewer).
// `mm` (its epilogue already fused) with `producer` as its A prologue when the kernel stores
// exactly A, element by element over A's row-major elements, and the product is single-row over
// A's contiguous rows; else nullopt. `positional` renders a kernel over storage ids numbered by
// position (module_plan's positional_program).
std::optional<MatmulCall> with_loop_prologue(const MatmulCall& mm, const lir::LoopKernel& producer,
                                             const lir::Program& p,
                                             const PositionalKernel& positional);

// An elementwise loop kernel inside the scatter that reads it: the rotated key row and the value
// row of a decode step, which only the scatters into the KV caches read, are computed where the
// scatter reads its updates (two launches a layer fewer). The updates computed by `producer` when
// it stores exactly the updates of `scatter`, element by element over their row-major elements,
// at a float dtype, reading neither the updates nor the scatter's operand or output (which an
// in-place update shares); else nullopt. `positional` as above; `norm` as in bind_operand_prologue.
std::optional<ComputedUpdates> with_update_prologue(const lir::LoopKernel& producer,
                                                    const lir::CallKernel& scatter,
                                                    const lir::Program& p,
                                                    const PositionalKernel& positional,
                                                    const NormCall* norm);

// The scatter after loop kernel `i` of `p` (its index: .first) computing its updates with
// with_update_prologue (.second), when `library` takes computed updates, nothing but the scatter
// reads them (`readers`: readers per storage buffer), they are not an output, and no kernel
// between the two writes what kernel `i` reads; else nullopt.
std::optional<std::pair<size_t, ComputedUpdates>> scatter_computing(
    const lir::Program& p, size_t i, const std::vector<int>& readers, const KernelLibrary& library,
    const PositionalKernel& positional, const NormCall* norm);

}  // namespace rlx::gpu_host
