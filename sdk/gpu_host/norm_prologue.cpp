#include "norm_prologue.h"

#include <algorithm>

namespace rlx::gpu_host {

std::optional<MatmulCall> with_norm_prologue(const MatmulCall& mm, const sdk::NormShape& norm,
                                             const std::vector<int32_t>& norm_buffers,
                                             DType out_dtype) {
  const sdk::MatmulShape& s = mm.shape;
  if (s.epilogue || s.m != 1 || s.a_k != 1 || s.b_k != 1 || s.k != norm.n) return std::nullopt;
  if (s.batch != norm.rows || (s.batch > 1 && s.a_batch != s.k)) return std::nullopt;
  if (s.a_dtype != out_dtype || norm.x_rows_per_block != 0 || norm.x_offset != 0)
    return std::nullopt;
  MatmulCall f = mm;
  const int32_t x = norm_buffers.at(norm.x_buffer);
  // x takes A's place; it must not be B or C, and scale and bias are parameters of their own
  // (or already one with the same dtype).
  for (size_t j = 0; j < f.buffers.size(); ++j)
    if (static_cast<int32_t>(j) != s.a_buffer && f.buffers[j] == x) return std::nullopt;
  f.buffers[s.a_buffer] = x;
  f.shape.a_dtype = norm.x_dtype;
  sdk::MatmulNormPrologue p;
  p.rms = norm.rms;
  p.epsilon = norm.epsilon;
  p.out_dtype = out_dtype;
  auto position = [&](int32_t at, DType dtype, int32_t* into, DType* dtype_into) {
    if (at < 0) return true;
    const int32_t storage = norm_buffers.at(at);
    auto it = std::find(f.buffers.begin(), f.buffers.end(), storage);
    if (it != f.buffers.end()) return false;  // an operand of the product: never, in practice
    *into = static_cast<int32_t>(f.buffers.size());
    *dtype_into = dtype;
    f.buffers.push_back(storage);
    return true;
  };
  if (!position(norm.scale_buffer, norm.scale_dtype, &p.scale_buffer, &p.scale_dtype) ||
      !position(norm.bias_buffer, norm.bias_dtype, &p.bias_buffer, &p.bias_dtype))
    return std::nullopt;
  f.shape.a_norm = p;
  return f;
}

}  // namespace rlx::gpu_host
