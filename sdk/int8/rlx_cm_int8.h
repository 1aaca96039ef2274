/* The int8 reference semantics of rlx's int8 targets, written once in portable C99 so that the
 * host reference (sdk/int8's run_reference, compiled as C++) and the code cortexm generates
 * (arm-none-eabi-gcc builds this very file beside it) run the same arithmetic; the fpga target's
 * SystemVerilog does the same steps in hardware. The name keeps cortexm's prefix because the
 * generated firmware includes it by that name. docs/decisions.md states the rules:
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
 *   residual     a skip added to a layer's result, both rescaled to the output's scale:
 *                y = clamp(zero_y + scale_q(acc, m, r) + scale_q(skip - zero_s, m_s, r_s), lo, hi),
 *                two roundings as above (acc first clamped at 0 when a ReLU precedes the add).
 *
 * Nothing here allocates; the caller owns every buffer. */
#ifndef RLX_CM_INT8_H
#define RLX_CM_INT8_H

#include <stdint.h>
#include <string.h>

/* Helium (MVE, Cortex-M55 built with an FPU ABI) first, then the DSP extension's SMLAD (M4,
 * M7), then plain C. RLX_CM_NO_MVE / RLX_CM_NO_SMLAD turn a path off (to measure what it buys;
 * integer sums are exact, so the results are identical). */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(RLX_CM_NO_MVE)
#include <arm_mve.h>
#define RLX_CM_USE_MVE 1
#else
#define RLX_CM_USE_MVE 0
#endif

#if !RLX_CM_USE_MVE && defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32) && \
    !defined(RLX_CM_NO_SMLAD)
#include <arm_acle.h>
#define RLX_CM_USE_SMLAD 1
#else
#define RLX_CM_USE_SMLAD 0
#endif

/* The convolution's helpers are inlined into each call, where the layer's window is a
 * constant: the compiler then specializes the loops to its kernel size and strides. */
#if defined(__GNUC__)
#define RLX_CM_SPECIALIZED static inline __attribute__((always_inline))
#else
#define RLX_CM_SPECIALIZED static inline
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
#if RLX_CM_USE_MVE
  /* Sixteen products per step: VMLADAVA multiplies the int8 lanes and adds their sum to acc. */
  for (; i + 16 <= k; i += 16) acc = vmladavaq_s8(acc, vld1q_s8(x + i), vld1q_s8(w + i));
#endif
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

/* acc * m * 2^-r, rounded half toward +infinity: (acc * m + 2^(r - 1)) >> r in 64 bits. */
static inline int64_t rlx_cm_scale_q(int32_t acc, int32_t m, int32_t r) {
  return ((int64_t)acc * (int64_t)m + ((int64_t)1 << (r - 1))) >> r;
}

/* The fixed-point requantization of one accumulator (see the rules above). */
static inline int8_t rlx_cm_requantize(int32_t acc, int32_t m, int32_t r, int32_t zero, int32_t lo,
                                       int32_t hi) {
  int64_t q = rlx_cm_scale_q(acc, m, r) + zero;
  if (q < lo) q = lo;
  if (q > hi) q = hi;
  return (int8_t)q;
}

/* A residual added in the requantization: the skip (laid out as the output), its zero point,
 * the fixed-point ratio of its scale to the output's, and whether a ReLU acts on the
 * accumulators before the add. */
typedef struct {
  const int8_t* x;
  int32_t zero, m, r;
  int32_t pre_relu;
} rlx_cm_residual;

/* Output element i's requantization, with the residual when res is not NULL. */
static inline int8_t rlx_cm_requantize_at(int32_t acc, int32_t m, int32_t r,
                                          const rlx_cm_residual* res, int32_t i, int32_t zero,
                                          int32_t lo, int32_t hi) {
  if (!res) return rlx_cm_requantize(acc, m, r, zero, lo, hi);
  if (res->pre_relu && acc < 0) acc = 0;
  int64_t q = rlx_cm_scale_q(acc, m, r) + rlx_cm_scale_q(res->x[i] - res->zero, res->m, res->r) +
              zero;
  if (q < lo) q = lo;
  if (q > hi) q = hi;
  return (int8_t)q;
}

/* A dense layer with int8 output: y[n] = requantize(bias[n] + x . w[n]) (+ the residual). */
static inline void rlx_cm_dense_s8(const int8_t* x, const int8_t* w, const int32_t* bias,
                                   const int32_t* m, const int8_t* r, int32_t n_out, int32_t k,
                                   const rlx_cm_residual* res, int32_t zero, int32_t lo,
                                   int32_t hi, int8_t* y) {
  for (int32_t n = 0; n < n_out; ++n)
    y[n] = rlx_cm_requantize_at(bias[n] + rlx_cm_dot_s8(x, w + n * k, k), m[n], r[n], res, n,
                                zero, lo, hi);
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

/* The geometry of a convolution or pool over one sample: input channels, height and width;
 * kernel; strides; top and left pads (the output size implies the others); output height and
 * width; groups (a convolution reads c / group channels per output channel). Activations are
 * NHWC, x[(y * w + x) * c + channel], so a pixel's channels are contiguous; convolution weights
 * are [n_out][kh][kw][c / group]. */
typedef struct {
  int32_t c, h, w, kh, kw, sh, sw, pt, pl, oh, ow, group;
} rlx_cm_window;

static inline int32_t rlx_cm_clamp_i32(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

/* sum over the window at (oy, ox) of x * w for channels [c0, c0 + cg); positions in the padding
 * read the input's zero point, which the folded bias expects (see the accumulator rule). Without
 * groups a kernel row's inside is one contiguous run of (columns x channels) in both x and w, a
 * single dot product; with groups each pixel's cg channels are one. The padding's share is
 * zero_in times the weights it meets, from taps (the sum of the output channel's weights at each
 * kernel position, [kh][kw]), only at the borders. */
RLX_CM_SPECIALIZED int32_t rlx_cm_window_dot(const int8_t* x, const rlx_cm_window* g, int32_t cg,
                                             int32_t c0, const int8_t* w, const int32_t* taps,
                                             int32_t oy, int32_t ox, int32_t zero_in) {
  const int32_t kh = g->kh, kw = g->kw, c = g->c;
  const int32_t y0 = oy * g->sh - g->pt, x0 = ox * g->sw - g->pl;
  const int32_t ky_lo = rlx_cm_clamp_i32(-y0, 0, kh), ky_hi = rlx_cm_clamp_i32(g->h - y0, ky_lo, kh);
  const int32_t kx_lo = rlx_cm_clamp_i32(-x0, 0, kw), kx_hi = rlx_cm_clamp_i32(g->w - x0, kx_lo, kw);
  int32_t acc = 0;
  for (int32_t ky = ky_lo; ky < ky_hi; ++ky) {
    const int8_t* xr = x + ((y0 + ky) * g->w + x0) * c + c0;
    const int8_t* wr = w + ky * kw * cg;
    if (cg == c) {
      acc += rlx_cm_dot_s8(xr + kx_lo * c, wr + kx_lo * c, (kx_hi - kx_lo) * c);
    } else {
      for (int32_t kx = kx_lo; kx < kx_hi; ++kx)
        acc += rlx_cm_dot_s8(xr + kx * c, wr + kx * cg, cg);
    }
  }
  if (taps && zero_in != 0 && (ky_lo > 0 || ky_hi < kh || kx_lo > 0 || kx_hi < kw)) {
    int32_t padded = 0; /* the weights that meet padding */
    for (int32_t ky = 0; ky < kh; ++ky)
      for (int32_t kx = 0; kx < kw; ++kx)
        if (ky < ky_lo || ky >= ky_hi || kx < kx_lo || kx >= kx_hi) padded += taps[ky * kw + kx];
    acc += zero_in * padded;
  }
  return acc;
}

/* A convolution with int8 output: y[oy][ox][o] = requantize(bias[o] + the window's products)
 * (+ the residual), per output channel o. taps: [n_out][kh][kw] weight sums for the padding's
 * share (NULL when no window meets padding, or the input's zero point is 0). */
RLX_CM_SPECIALIZED void rlx_cm_conv_s8(const int8_t* x, const rlx_cm_window* g, const int8_t* w,
                                       const int32_t* taps, const int32_t* bias, const int32_t* m,
                                       const int8_t* r, int32_t n_out, const rlx_cm_residual* res,
                                       int32_t zero_in, int32_t zero, int32_t lo, int32_t hi,
                                       int8_t* y) {
  const int32_t cg = g->c / g->group, og = n_out / g->group, k = cg * g->kh * g->kw;
  for (int32_t oy = 0; oy < g->oh; ++oy)
    for (int32_t ox = 0; ox < g->ow; ++ox)
      for (int32_t o = 0; o < n_out; ++o) {
        const int32_t i = (oy * g->ow + ox) * n_out + o;
        y[i] = rlx_cm_requantize_at(
            bias[o] + rlx_cm_window_dot(x, g, cg, (o / og) * cg, w + o * k,
                                        taps ? taps + o * g->kh * g->kw : 0, oy, ox, zero_in),
            m[o], r[o], res, i, zero, lo, hi);
      }
}

/* Max pooling of int8 values: the quantization is monotone, so the int8 maximum is the
 * maximum's quantization. Padding never wins (every window holds an input element). */
static inline void rlx_cm_maxpool_s8(const int8_t* x, const rlx_cm_window* g, int8_t* y) {
  for (int32_t oy = 0; oy < g->oh; ++oy)
    for (int32_t ox = 0; ox < g->ow; ++ox)
      for (int32_t c = 0; c < g->c; ++c) {
        int32_t best = -128;
        for (int32_t ky = 0; ky < g->kh; ++ky) {
          const int32_t iy = oy * g->sh - g->pt + ky;
          if (iy < 0 || iy >= g->h) continue;
          for (int32_t kx = 0; kx < g->kw; ++kx) {
            const int32_t ix = ox * g->sw - g->pl + kx;
            if (ix >= 0 && ix < g->w && x[(iy * g->w + ix) * g->c + c] > best)
              best = x[(iy * g->w + ix) * g->c + c];
          }
        }
        y[(oy * g->ow + ox) * g->c + c] = (int8_t)best;
      }
}

/* Average pooling of int8 values in one quantization: q = zero + the window's sum of
 * (x - zero) divided by kh * kw (padding adds 0), rounded half away from zero, saturated. */
static inline void rlx_cm_avgpool_s8(const int8_t* x, const rlx_cm_window* g, int32_t zero,
                                     int8_t* y) {
  const int32_t count = g->kh * g->kw;
  for (int32_t oy = 0; oy < g->oh; ++oy)
    for (int32_t ox = 0; ox < g->ow; ++ox)
      for (int32_t c = 0; c < g->c; ++c) {
        int32_t sum = 0;
        for (int32_t ky = 0; ky < g->kh; ++ky) {
          const int32_t iy = oy * g->sh - g->pt + ky;
          if (iy < 0 || iy >= g->h) continue;
          for (int32_t kx = 0; kx < g->kw; ++kx) {
            const int32_t ix = ox * g->sw - g->pl + kx;
            if (ix >= 0 && ix < g->w) sum += x[(iy * g->w + ix) * g->c + c] - zero;
          }
        }
        int32_t q = sum >= 0 ? (2 * sum + count) / (2 * count) : -((count - 2 * sum) / (2 * count));
        q += zero;
        y[(oy * g->ow + ox) * g->c + c] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
      }
}

/* Softmax over the last layer's int32 accumulators, to int8 probabilities (real = (q + 128) /
 * 256), all in integers:
 *   logit[n] = (acc[n] * m[n] + 2^(r[n] - 1)) >> r[n]   the real logit in Q12 (m, r from
 *                                                       scale[n] * 2^12, as in requantization)
 *   d = max - logit[n] >= 0;  t = (d * 94548) >> 16      d * log2(e) (94548 = log2(e) * 2^16)
 *   e[n] = rlx_cm_exp2_frac_q30[(t & 4095) >> 4] >> (t >> 12), 0 when t >> 12 > 30
 *                                                       2^-t in Q30, fraction to 1/256 octave
 *   q[n] = min((e[n] * 256 + sum / 2) / sum, 255) - 128  sum = the sum of e (64-bit)
 * Each step is exact integer arithmetic, so every compiler gets the same bits. */
static const uint32_t rlx_cm_exp2_frac_q30[256] = {
    1073741824u, 1070838486u, 1067942999u, 1065055341u, 1062175491u, 1059303428u, 1056439131u,
    1053582579u, 1050733751u, 1047892626u, 1045059183u, 1042233401u, 1039415261u, 1036604740u,
    1033801819u, 1031006477u, 1028218693u, 1025438448u, 1022665720u, 1019900489u, 1017142735u,
    1014392438u, 1011649578u, 1008914134u, 1006186087u, 1003465416u, 1000752102u, 998046124u,
    995347464u,  992656100u,  989972014u,  987295185u,  984625594u,  981963222u,  979308048u,
    976660054u,  974019220u,  971385527u,  968758955u,  966139485u,  963527098u,  960921775u,
    958323496u,  955732243u,  953147997u,  950570738u,  948000448u,  945437108u,  942880699u,
    940331203u,  937788600u,  935252872u,  932724001u,  930201967u,  927686753u,  925178340u,
    922676710u,  920181844u,  917693724u,  915212331u,  912737649u,  910269657u,  907808339u,
    905353676u,  902905651u,  900464244u,  898029440u,  895601218u,  893179563u,  890764456u,
    888355878u,  885953814u,  883558244u,  881169153u,  878786521u,  876410331u,  874040567u,
    871677210u,  869320244u,  866969651u,  864625413u,  862287515u,  859955938u,  857630665u,
    855311680u,  852998965u,  850692504u,  848392279u,  846098274u,  843810471u,  841528855u,
    839253408u,  836984114u,  834720956u,  832463917u,  830212982u,  827968132u,  825729353u,
    823496627u,  821269938u,  819049271u,  816834607u,  814625932u,  812423229u,  810226483u,
    808035676u,  805850792u,  803671817u,  801498734u,  799331526u,  797170178u,  795014675u,
    792865000u,  790721137u,  788583072u,  786450787u,  784324269u,  782203500u,  780088465u,
    777979150u,  775875538u,  773777614u,  771685363u,  769598769u,  767517817u,  765442492u,
    763372778u,  761308661u,  759250125u,  757197155u,  755149737u,  753107854u,  751071493u,
    749040637u,  747015274u,  744995386u,  742980960u,  740971982u,  738968435u,  736970306u,
    734977579u,  732990241u,  731008277u,  729031671u,  727060411u,  725094480u,  723133865u,
    721178552u,  719228525u,  717283772u,  715344277u,  713410026u,  711481005u,  709557200u,
    707638598u,  705725183u,  703816941u,  701913860u,  700015924u,  698123120u,  696235434u,
    694352853u,  692475362u,  690602947u,  688735596u,  686873293u,  685016026u,  683163781u,
    681316545u,  679474303u,  677637043u,  675804750u,  673977412u,  672155015u,  670337545u,
    668524990u,  666717336u,  664914570u,  663116678u,  661323648u,  659535466u,  657752119u,
    655973594u,  654199878u,  652430958u,  650666822u,  648907455u,  647152846u,  645402981u,
    643657847u,  641917433u,  640181724u,  638450708u,  636724373u,  635002706u,  633285695u,
    631573326u,  629865587u,  628162466u,  626463950u,  624770026u,  623080683u,  621395908u,
    619715688u,  618040012u,  616368866u,  614702239u,  613040119u,  611382493u,  609729349u,
    608080675u,  606436459u,  604796689u,  603161352u,  601530438u,  599903933u,  598281827u,
    596664106u,  595050760u,  593441776u,  591837143u,  590236848u,  588640881u,  587049229u,
    585461881u,  583878825u,  582300049u,  580725543u,  579155293u,  577589290u,  576027521u,
    574469975u,  572916640u,  571367506u,  569822560u,  568281792u,  566745190u,  565212742u,
    563684439u,  562160268u,  560640218u,  559124278u,  557612438u,  556104685u,  554601009u,
    553101399u,  551605844u,  550114332u,  548626854u,  547143398u,  545663953u,  544188508u,
    542717053u,  541249576u,  539786068u,  538326517u,
};

static inline void rlx_cm_softmax_s8(const int32_t* acc, const int32_t* m, const int8_t* r,
                                     int32_t n, uint32_t* e, int8_t* y) {
  int64_t top = INT64_MIN;
  for (int32_t i = 0; i < n; ++i) {
    const int64_t logit = rlx_cm_scale_q(acc[i], m[i], r[i]);
    if (logit > top) top = logit;
  }
  uint64_t sum = 0;
  for (int32_t i = 0; i < n; ++i) {
    const int64_t t = ((top - rlx_cm_scale_q(acc[i], m[i], r[i])) * 94548) >> 16;
    e[i] = (t >> 12) > 30 ? 0u : rlx_cm_exp2_frac_q30[(t & 4095) >> 4] >> (t >> 12);
    sum += e[i];
  }
  for (int32_t i = 0; i < n; ++i) {
    uint64_t q = ((uint64_t)e[i] * 256u + sum / 2u) / sum;
    if (q > 255u) q = 255u;
    y[i] = (int8_t)((int32_t)q - 128);
  }
}

#endif /* RLX_CM_INT8_H */
