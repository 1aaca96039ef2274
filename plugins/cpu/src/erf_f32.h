// erf for f32 written once and used twice: compiled here into the loop interpreter (scalar_ops.h)
// and pasted as C text into the prelude of the generated kernels (codegen_module.cpp), so the two
// give the same bits, which test_codegen checks. The C library's erff is a call the compiler
// cannot vectorise: a GELU loop over MiniLM's FFN activations (amp-bf16, where the GELU is not
// fused into the product) spent ~4 ns an element in it. This form has no calls and no branches,
// only selects, so a loop of it vectorises (-O3 -march=x86-64-v4: 16 lanes).
//
// The algorithm is the GEMM epilogue's erf (gemm_epilogue.inc, where it is written on vectors):
// below |x| = 1, x P(x^2); above, 1 - e^(-x^2) Q(1 / (1 + |x| / 2)) with |x| clamped to 4 (erf
// is 1 in f32 past 3.9), e^z on [-16, 0] by Cody-Waite reduction and a degree-7 polynomial.
// The polynomials' Horner steps are explicit fused multiply-adds: one correctly rounded
// operation whether the hardware does it (the generated kernels, compiled for the host with
// -ffp-contract=off, which otherwise split each step in two: a GELU loop ran 3.6 cycles an
// element, 2.75 with them) or libm's fmaf does (the interpreter on a baseline build), so the
// two still agree bit for bit. Within 3 ulp of double erf (test_gemm.cpp sweeps it).
#pragma once

// The definition as one macro, so the same tokens are C++ here and C text in the prelude
// (RLX_STRINGIFY). C and C++ both accept it: memcpy for the bit casts, no std::.
#define RLX_ERFF_DEFINITION                                          \
  static inline float rlx_exp_erff(float z) {                        \
    const float magic = 12582912.0f;                                 \
    const float n = (z * 1.44269504f + magic) - magic;               \
    float r = z - n * 0.693359375f;                                  \
    r = r - n * -2.12194440e-4f;                                     \
    float p = 1.0f / 5040;                                           \
    p = __builtin_fmaf(p, r, 1.0f / 720);                                          \
    p = __builtin_fmaf(p, r, 1.0f / 120);                                          \
    p = __builtin_fmaf(p, r, 1.0f / 24);                                           \
    p = __builtin_fmaf(p, r, 1.0f / 6);                                            \
    p = __builtin_fmaf(p, r, 0.5f);                                                \
    p = __builtin_fmaf(p, r, 1.0f);                                                \
    p = __builtin_fmaf(p, r, 1.0f);                                                \
    const int bits = ((int)n + 127) << 23;                           \
    float scale;                                                     \
    __builtin_memcpy(&scale, &bits, 4);                              \
    return p * scale;                                                \
  }                                                                  \
  static inline float rlx_erff(float x) {                            \
    const float ax = x < 0.0f ? -x : x, x2 = x * x;                  \
    float p = 7.854792784200981e-05f;                                \
    p = __builtin_fmaf(p, x2, -0.0008010496967472136f);                            \
    p = __builtin_fmaf(p, x2, 0.005188365466892719f);                              \
    p = __builtin_fmaf(p, x2, -0.026853835210204124f);                             \
    p = __builtin_fmaf(p, x2, 0.11283586174249649f);                               \
    p = __builtin_fmaf(p, x2, -0.3761262595653534f);                               \
    const float small = x * 1.1283791065216064f + (x * x2) * p;      \
    const float a4 = ax < 4.0f ? ax : 4.0f;                          \
    const float t = 1.0f / (1.0f + 0.5f * a4);                       \
    float q = 0.11901799589395523f;                                  \
    q = __builtin_fmaf(q, t, -0.47015833854675293f);                               \
    q = __builtin_fmaf(q, t, 0.5618825554847717f);                                 \
    q = __builtin_fmaf(q, t, -0.10259991884231567f);                               \
    q = __builtin_fmaf(q, t, 0.3473644256591797f);                                 \
    q = __builtin_fmaf(q, t, 0.2598007321357727f);                                 \
    q = __builtin_fmaf(q, t, 0.2848964035511017f);                                 \
    q = __builtin_fmaf(q, t, -0.00015319720841944218f);                            \
    const float mag = 1.0f - rlx_exp_erff(-(a4 * a4)) * q;           \
    const float big = x < 0.0f ? -mag : mag;                         \
    /* x itself at +-0 (the sum above makes -0 into +0) and NaN */   \
    return x == 0.0f ? x : ax < 1.0f ? small : (ax == ax ? big : x); \
  }

#define RLX_STRINGIFY_ARGS(...) #__VA_ARGS__
#define RLX_STRINGIFY(x) RLX_STRINGIFY_ARGS(x)

namespace rlx::cpu {
RLX_ERFF_DEFINITION
}  // namespace rlx::cpu
