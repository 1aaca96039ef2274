/* The int8 reference semantics of the cortexm target, written once in portable C99 so that the
 * host reference (the plugin and its tests, compiled as C++) and the generated firmware code
 * (arm-none-eabi-gcc) run the very same arithmetic. docs/decisions.md states the rules:
 *
 *   activations  int8, asymmetric: real = scale * (q - zero); the u8 form of rlx/core/quantize.h
 *                shifted by 128 (q8 = q_u8 - 128, zero8 = zero_u8 - 128).
 *   weights      int8, symmetric per output channel, in [-127, 127].
 *   accumulator  int32: acc[n] = bias[n] + sum_k x[k] * w[n][k], where bias already holds the
 *                input zero point's share (-zero_x * sum_k w[n][k]) and round(b / (sx * sw[n])).
 *   requantize   y = clamp(((acc * m + 2^(r - 1)) >> r) + zero_y, lo, hi) in 64-bit arithmetic:
 *                the real multiplier sx * sw[n] / sy = m * 2^-r with m in [2^30, 2^31), one
 *                rounding, half toward +infinity (>> is arithmetic on every compiler we target).
 *                ReLU is lo = zero_y; no ReLU is lo = -128; hi = 127.
 *   saturation   every int8 result is clamped; int32 results are exact (no overflow for K < 2^17).
 *
 * Nothing here allocates; the caller owns every buffer. */
#ifndef RLX_CM_INT8_H
#define RLX_CM_INT8_H

#include <stdint.h>
#include <string.h>

/* RLX_CM_NO_SMLAD turns the DSP path off (to measure what it buys; results are identical). */
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32) && !defined(RLX_CM_NO_SMLAD)
#include <arm_acle.h>
#define RLX_CM_USE_SMLAD 1
#else
#define RLX_CM_USE_SMLAD 0
#endif

#if RLX_CM_USE_SMLAD
/* Rotate right by 8; gcc folds it into SXTB16's operand rotation. */
static inline uint32_t rlx_cm_ror8(uint32_t v) {
  return (v >> 8) | (v << 24);
}
#endif

/* sum_k x[k] * w[k], exact in int32. */
static inline int32_t rlx_cm_dot_s8(const int8_t* x, const int8_t* w, int32_t k) {
  int32_t acc = 0;
  int32_t i = 0;
#if RLX_CM_USE_SMLAD
  /* Four products per step: SXTB16 widens bytes 0 and 2 (and, rotated, 1 and 3) to two int16
   * lanes and SMLAD adds both lane products to the accumulator. Integer sums are exact, so the
   * order does not change the result. */
  for (; i + 4 <= k; i += 4) {
    uint32_t xv, wv;
    memcpy(&xv, x + i, 4);
    memcpy(&wv, w + i, 4);
    acc = (int32_t)__smlad(__sxtb16(xv), __sxtb16(wv), (uint32_t)acc);
    acc = (int32_t)__smlad(__sxtb16(rlx_cm_ror8(xv)), __sxtb16(rlx_cm_ror8(wv)), (uint32_t)acc);
  }
#endif
  for (; i < k; ++i) acc += (int32_t)x[i] * (int32_t)w[i];
  return acc;
}

/* The fixed-point requantization of one accumulator (see the rules above). */
static inline int8_t rlx_cm_requantize(int32_t acc, int32_t m, int32_t r, int32_t zero, int32_t lo,
                                       int32_t hi) {
  int64_t p = (int64_t)acc * (int64_t)m;
  int64_t q = ((p + ((int64_t)1 << (r - 1))) >> r) + zero;
  if (q < lo) q = lo;
  if (q > hi) q = hi;
  return (int8_t)q;
}

/* A dense layer with int8 output: y[n] = requantize(bias[n] + x . w[n]). */
static inline void rlx_cm_dense_s8(const int8_t* x, const int8_t* w, const int32_t* bias,
                                   const int32_t* m, const int8_t* r, int32_t n_out, int32_t k,
                                   int32_t zero, int32_t lo, int32_t hi, int8_t* y) {
  for (int32_t n = 0; n < n_out; ++n)
    y[n] = rlx_cm_requantize(bias[n] + rlx_cm_dot_s8(x, w + n * k, k), m[n], r[n], zero, lo, hi);
}

/* A dense layer whose int32 accumulators are the output (the last layer: real = acc * scale[n],
 * a per-channel scale the model header lists). relu clamps at 0. */
static inline void rlx_cm_dense_s32(const int8_t* x, const int8_t* w, const int32_t* bias,
                                    int32_t n_out, int32_t k, int relu, int32_t* y) {
  for (int32_t n = 0; n < n_out; ++n) {
    int32_t acc = bias[n] + rlx_cm_dot_s8(x, w + n * k, k);
    y[n] = relu && acc < 0 ? 0 : acc;
  }
}

#endif /* RLX_CM_INT8_H */
