// Products of ggml block weights with activations, the kernels of DequantMatMul: with f32
// activations (qdot_rows_f32, the default) and, below, with 8-bit activations: the arithmetic
// llama.cpp uses for quantized matrix products, and what DequantMatMul {activations = "q8"}
// means.
//
// Each row of activations is quantized once per call into 8-bit blocks with one f32 scale per
// block: blocks of 32 (like ggml's Q8_0) for the 32-element weight formats, blocks of 256 with
// sums per 16 (ggml's Q8_K) for the 256-element K formats. A weight block then meets an
// activation block as one integer dot product scaled by the two block scales, so the weights
// never widen to f32 and decode (one row of activations) reads each weight byte once.
//
// Numerics: the only rounding beyond the f32 path's is the activations' (round to nearest of
// x / d with d = max|x| / 127 over the block); integer sums are exact, the per-block scaling and
// the sum over blocks are f32.
//
// Two implementations: AVX-512 VNNI (vpdpbusd) where the CPU has it, and a portable one that
// decodes both operands to f32 (the same sum up to f32 rounding). RLX_CPU_QDOT_ISA=portable|
// avx512vnni picks one; an unsupported choice is an error, never a silent fallback.
#pragma once
#include <cstddef>
#include <cstdint>

#include "rlx/core/quant.h"

namespace rlx::cpu {

// The activation block layouts. Plain structs: a row of them is a contiguous array.
struct QAct32 {
  float d;     // scale: x ~ d * q
  float dsum;  // d * sum(q): the activation side of a weight format's offset or minimum
  int8_t q[32];
};
struct QAct256 {
  float d;
  int16_t bsums[16];  // sum(q) over each 16 elements
  int8_t q[256];
};
static_assert(sizeof(QAct32) == 40 && sizeof(QAct256) == 292);

enum class QDotIsa : uint8_t { kPortable, kAvx512Vnni };
const char* qdot_isa_name(QDotIsa isa);
bool qdot_isa_supported(QDotIsa isa);
QDotIsa qdot_isa();              // RLX_CPU_QDOT_ISA when set, else the best the CPU has
void set_qdot_isa(QDotIsa isa);  // tests force each path; throws when the CPU lacks it

// Whether the SIMD path covers `t`; the portable path takes every format of 32 or 256 elements.
bool qdot_supports(quant::QType t);
// Block size of the activations `t` pairs with (32 or 256), and the bytes of one quantized row.
int64_t qdot_act_block(quant::QType t);
size_t qdot_act_row_bytes(quant::QType t, int64_t k);

// Quantizes one row of k activations (k a multiple of the weight's block size) into dst.
void qdot_quantize_row(quant::QType t, const float* x, int64_t k, void* dst);

// x as the 8-bit blocks represent it (d * q per element), in f32: a product of exact weights
// with this row is the integer product's value up to f32 rounding, so several rows (prefill)
// can take the f32 GEMM with llama.cpp's arithmetic.
void qdot_round_row(quant::QType t, const float* x, int64_t k, float* out);

// y[m * ldy + n] = sum_k W[n, k] * X[m, k] for n in [n0, n1), m in [0, M): W as rows of
// `row_bytes` block bytes, X as M quantized rows `xq_stride` bytes apart. Runs on the calling
// thread; callers split [0, N) over threads.
void qdot_rows(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
               const void* xq, int64_t xq_stride, int64_t M, int64_t k, float* y, int64_t ldy);

// The same product with x as it is (f32, M rows `ldx` floats apart): DequantMatMul's default
// arithmetic. The SIMD path decodes each weight block in registers to exactly the values
// quant::dequantize gives (Q8_0 scales each block's sum instead of each weight); the portable
// one decodes a row at a time.
void qdot_rows_f32(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                   const float* x, int64_t ldx, int64_t M, int64_t k, float* y, int64_t ldy);

// Decodes rows [n0, n1) of W to f32, row n at out + (n - n0) * ldo: quant::dequantize's values,
// with SIMD where qdot_supports(t).
void qdot_decode_rows(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                      int64_t k, float* out, int64_t ldo);

namespace detail {
void qdot_decode_rows_avx512(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0,
                             int64_t n1, int64_t k, float* out, int64_t ldo);
// The ISA entry points behind qdot_rows (same contract); avx512vnni only where supported.
void qdot_rows_portable(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0, int64_t n1,
                        const void* xq, int64_t xq_stride, int64_t M, int64_t k, float* y,
                        int64_t ldy);
void qdot_rows_avx512vnni(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0,
                          int64_t n1, const void* xq, int64_t xq_stride, int64_t M, int64_t k,
                          float* y, int64_t ldy);
void qdot_rows_f32_portable(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0,
                            int64_t n1, const float* x, int64_t ldx, int64_t M, int64_t k, float* y,
                            int64_t ldy);
void qdot_rows_f32_avx512(quant::QType t, const uint8_t* w, int64_t row_bytes, int64_t n0,
                          int64_t n1, const float* x, int64_t ldx, int64_t M, int64_t k, float* y,
                          int64_t ldy);
}  // namespace detail

}  // namespace rlx::cpu
