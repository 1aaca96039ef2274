// A 64-bit element seen as two 32-bit ones (the bitcast primitive): c64 as (real, imaginary)
// f32, i64 as (low, high) i32 words. The complex ops and the split rewrites (dispatch/) take
// values apart and put them together only through these two functions, so the canonicaliser's
// one pattern (bitcast of bitcast, a slice of one concat operand) removes every pair between two
// split nodes.
#pragma once
#include "rlx/core/builder.h"

namespace rlx::ops {

// Part k (0 or 1) of x, as `half` (f32 for c64, i32 for i64), shaped like x.
ValueId pair_part(GraphBuilder& b, ValueId x, DType half, int64_t k);
// The 64-bit `whole` tensor with parts a and b (numpy broadcasting between them).
ValueId pair_join(GraphBuilder& b, ValueId first, ValueId second, DType whole);

}  // namespace rlx::ops
