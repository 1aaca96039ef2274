// Linear int8/int4 quantization of f32 values: what `rlx quantize` writes into a checkpoint and
// what the QMatMul kernels do to activations at run time, in one place so that the writer, the
// kernels and the tests agree on the arithmetic.
//
//   weights, int8:  per output channel (row n of W [N, K]), symmetric: s_n = max|W[n, :]| / 127,
//                   q = round(w / s_n) in [-127, 127] (never -128: u8 x s8 products stay exact).
//   weights, int4:  per group of g consecutive weights of a row, asymmetric: s = (hi - lo) / 15,
//                   z = round(-lo / s) in [0, 15], q = clamp(round(w / s) + z, 0, 15).
//   activations:    asymmetric u8 over a range [lo, hi] widened to hold 0: s = (hi - lo) / 255,
//                   z = round(-lo / s), q = clamp(round(x / s) + z, 0, 255): per row at run time
//                   (int8-dynamic, ONNX's DynamicQuantizeLinear per row) or one range found by
//                   calibration (int8 static).
// Rounding is half to even throughout (std::nearbyint in the default rounding mode).
#pragma once
#include <cstdint>

namespace rlx::quant {

struct U8Params {
  float scale = 1;
  uint8_t zero = 0;
};

// The u8 parameters of the range [lo, hi] (widened to hold 0; an empty range gets scale 1).
U8Params u8_params(float lo, float hi);
// q[i] for x[0, k) with the given parameters.
void quantize_u8(const float* x, int64_t k, U8Params p, uint8_t* q);

// Per-channel symmetric int8 of w [n, k]: q [n, k], scale [n].
void quantize_int8_rows(const float* w, int64_t n, int64_t k, int8_t* q, float* scale);

// Asymmetric int4 of w [n, k] in groups of `group` (k a multiple of it): packed [n, k / 2]
// (element 2j in the low nibble of byte j of its row), scale and zero [n, k / group].
void quantize_int4_groups(const float* w, int64_t n, int64_t k, int64_t group, uint8_t* packed,
                          float* scale, uint8_t* zero);

// The same int4 format chosen with GPTQ (Frantar et al., 2022) for the product X W^T rather than
// for W: `gram` [k, k] is X^T X over the calibration rows of the layer's activations X [rows, k].
// Each group's scale and zero are quantize_int4_groups' (from the original weights); columns are
// rounded in descending order of H's diagonal, and each column's rounding error, divided by
// U[j, j], is subtracted along U[j, j+1:] from the columns after it in that order, where U is
// upper triangular with U^T U = (P (H + d I) P^T)^-1, P the order and d = 1% of H's mean
// diagonal. With a diagonal H nothing moves and the result is quantize_int4_groups'.
void quantize_int4_groups_gptq(const float* w, int64_t n, int64_t k, int64_t group,
                               const double* gram, uint8_t* packed, float* scale, uint8_t* zero);

// gram [k, k] += X^T X for the rows of x [rows, k], both triangles (GPTQ's calibration sums).
void add_gram(const float* x, int64_t rows, int64_t k, double* gram);

// The same int4 weights as rows of i4_g{group} blocks (rlx/core/quant.h): out [n, row bytes].
void int4_groups_to_blocks(const uint8_t* packed, const float* scale, const uint8_t* zero,
                           int64_t n, int64_t k, int64_t group, uint8_t* out);

}  // namespace rlx::quant
