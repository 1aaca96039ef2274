// Which loop kernels a matrix product takes in as its epilogue (module_plan.cpp's planning of a
// program's products): the rendered product's bias, activation and residual (render.h,
// MatmulEpilogue), or the bias row and residual a vendor library adds before it stores.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dot_general_form.h"
#include "module_plan.h"

namespace rlx::gpu_host {

// Whether reading with `strides` over `domain` visits a dense row-major block exactly once in
// another order (a transpose).
bool dense_permutation(const std::vector<int64_t>& domain, const std::vector<int64_t>& strides);

// Folds the loop kernels after product `i` of `p` that take its result element by element into
// `mm` as its epilogue; `readers` counts the operand slots reading each storage buffer. Returns
// how many kernels it took.
size_t fuse_epilogue(MatmulCall& mm, const lir::Program& p, size_t i,
                     const std::vector<int>& readers);

// Takes the loop kernel after vendor product `i` into `lm` when it only adds a bias row and/or
// a residual; returns how many kernels it took (0 or 1).
size_t fuse_vendor_epilogue(LibraryMatmul& lm, const lir::Program& p, size_t i,
                            const std::vector<int>& readers);

}  // namespace rlx::gpu_host
