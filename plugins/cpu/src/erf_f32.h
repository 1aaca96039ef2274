// erf for f32 written once and used twice: compiled here into the loop interpreter (scalar_ops.h)
// and pasted as C text into the prelude of the generated kernels (codegen_module.cpp), so the two
// give the same bits, which test_codegen checks. The C library's erff is a call the compiler
// cannot vectorise: a GELU loop over MiniLM's FFN activations (amp-bf16, where the GELU is not
// fused into the product) spent ~4 ns an element in it. This form has no calls and no branches,
// only selects, so a loop of it vectorises (-O3 -march=x86-64-v4: 16 lanes).
//
// The algorithm is the GEMM epilogue's erf (gemm_epilogue.inc, where it is written on vectors):
// below |x| = 1, x P(x^2); from 1 to 3.92, a polynomial of degree 14 in |x| - 2.46875, whose
// Horner steps are well conditioned there (the sum of |a_k| r^k is 1.2), so f32 evaluation
// keeps it within about 1 ulp; past 3.92 erf rounds to 1 in f32. It replaced 1 - e^(-x^2) Q(t)
// with t = 1 / (1 + |x| / 2): the division and the exponential cost more than the longer
// polynomial (a GELU loop over bf16 activations: 1.20 -> 1.03 ns an element).
// The polynomials' Horner steps are explicit fused multiply-adds: one correctly rounded
// operation whether the hardware does it (the generated kernels, compiled for the host with
// -ffp-contract=off, which otherwise split each step in two: a GELU loop ran 3.6 cycles an
// element, 2.75 with them) or libm's fmaf does (the interpreter on a baseline build), so the
// two still agree bit for bit. Within 3 ulp of double erf (test_gemm.cpp sweeps it).
#pragma once

// The definition as one macro, so the same tokens are C++ here and C text in the prelude
// (RLX_STRINGIFY). C and C++ both accept it: memcpy for the bit casts, no std::.
#define RLX_ERFF_DEFINITION                                          \
  static inline float rlx_erff(float x) {                            \
    const float ax = x < 0.0f ? -x : x, x2 = x * x;                  \
    float p = 7.854792784200981e-05f;                                \
    p = __builtin_fmaf(p, x2, -0.0008010496967472136f);              \
    p = __builtin_fmaf(p, x2, 0.005188365466892719f);                \
    p = __builtin_fmaf(p, x2, -0.026853835210204124f);               \
    p = __builtin_fmaf(p, x2, 0.11283586174249649f);                 \
    p = __builtin_fmaf(p, x2, -0.3761262595653534f);                 \
    const float small = x * 1.1283791065216064f + (x * x2) * p;      \
    const float v = (ax < 3.92f ? ax : 3.92f) - 2.46875f;            \
    float q = 1.09712664e-06f;                                       \
    q = __builtin_fmaf(q, v, 3.28768294e-07f);                       \
    q = __builtin_fmaf(q, v, -1.73212284e-05f);                      \
    q = __builtin_fmaf(q, v, 2.22372037e-05f);                       \
    q = __builtin_fmaf(q, v, 7.81079143e-05f);                       \
    q = __builtin_fmaf(q, v, -0.000291262462f);                      \
    q = __builtin_fmaf(q, v, 0.000332623487f);                       \
    q = __builtin_fmaf(q, v, 0.000481504831f);                       \
    q = __builtin_fmaf(q, v, -0.00290835975f);                       \
    q = __builtin_fmaf(q, v, 0.00664719334f);                        \
    q = __builtin_fmaf(q, v, -0.00962003414f);                       \
    q = __builtin_fmaf(q, v, 0.00949036144f);                        \
    q = __builtin_fmaf(q, v, -0.00628093258f);                       \
    q = __builtin_fmaf(q, v, 0.00254413323f);                        \
    q = __builtin_fmaf(q, v, 0.999519408f);                          \
    const float mag = ax < 3.92f ? q : 1.0f;                         \
    const float big = x < 0.0f ? -mag : mag;                         \
    /* x itself at +-0 (the sum above makes -0 into +0) and NaN */   \
    return x == 0.0f ? x : ax < 1.0f ? small : (ax == ax ? big : x); \
  }

#define RLX_STRINGIFY_ARGS(...) #__VA_ARGS__
#define RLX_STRINGIFY(x) RLX_STRINGIFY_ARGS(x)

namespace rlx::cpu {
RLX_ERFF_DEFINITION
}  // namespace rlx::cpu
