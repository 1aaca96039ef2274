/* The freestanding runtime of rlx's Hexagon programs (see rlx_hexagon_rt.h). Nothing here may use
   `/` or `%` on integers or floats: clang lowers them to the helpers defined below. The float
   functions work on the IEEE bits; division, sqrt and fmod are correctly rounded (exact for fmod),
   the transcendental functions are within a few f32 ulps over the ranges models use (sin and cos
   reduce their argument with a three-part pi/2, accurate for |x| below about 1e5). */
#include "rlx_hexagon_rt.h"

#define HVX_LANES 128
typedef long HVX_Vector __attribute__((__vector_size__(128))) __attribute__((aligned(128)));
typedef long HVX_VectorPair __attribute__((__vector_size__(256))) __attribute__((aligned(256)));
#include <hvx_hexagon_protos.h>

static inline uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- integer division (restoring, one quotient bit per step from the divisor's top bit) ---- */

static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t* rem) {
  if (d == 0) { /* the kernels never divide by zero (they test first); keep it total anyway */
    *rem = n;
    return 0;
  }
  uint64_t q = 0, r = 0;
  int top = 63 - __builtin_clzll(n | 1);
  for (int i = top; i >= 0; --i) {
    r = (r << 1) | ((n >> i) & 1u);
    if (r >= d) {
      r -= d;
      q |= (uint64_t)1 << i;
    }
  }
  *rem = r;
  return q;
}

uint64_t __hexagon_udivdi3(uint64_t a, uint64_t b) {
  uint64_t r;
  return udivmod64(a, b, &r);
}
uint64_t __hexagon_umoddi3(uint64_t a, uint64_t b) {
  uint64_t r;
  udivmod64(a, b, &r);
  return r;
}
int64_t __hexagon_divdi3(int64_t a, int64_t b) {
  uint64_t r, ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a,
              ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  uint64_t q = udivmod64(ua, ub, &r);
  return (int64_t)((a < 0) != (b < 0) ? 0 - q : q);
}
int64_t __hexagon_moddi3(int64_t a, int64_t b) {
  uint64_t r, ua = a < 0 ? 0 - (uint64_t)a : (uint64_t)a,
              ub = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
  udivmod64(ua, ub, &r);
  return (int64_t)(a < 0 ? 0 - r : r);
}
uint32_t __hexagon_udivsi3(uint32_t a, uint32_t b) {
  return (uint32_t)__hexagon_udivdi3(a, b);
}
uint32_t __hexagon_umodsi3(uint32_t a, uint32_t b) {
  return (uint32_t)__hexagon_umoddi3(a, b);
}
int32_t __hexagon_divsi3(int32_t a, int32_t b) {
  return (int32_t)__hexagon_divdi3(a, b);
}
int32_t __hexagon_modsi3(int32_t a, int32_t b) {
  return (int32_t)__hexagon_moddi3(a, b);
}

/* ---- f32 from an exact value m * 2^e (plus `sticky`: nonzero bits below m), rounded to nearest
   even, with subnormals and overflow ---- */

static float round_pack(uint32_t sign, uint64_t m, int32_t e, int sticky) {
  if (m == 0) return float_of(sign);
  int32_t n = 64 - __builtin_clzll(m);
  int32_t biased = e + n - 1 + 127;
  int32_t shift = n - 24 + (biased < 1 ? 1 - biased : 0);
  uint64_t kept;
  if (shift <= 0) {
    kept = m << -shift;
  } else if (shift > 63) {
    kept = 0; /* far below the smallest subnormal: rounds to zero */
  } else {
    kept = m >> shift;
    uint64_t rest = m & (((uint64_t)1 << shift) - 1), half = (uint64_t)1 << (shift - 1);
    if (rest > half || (rest == half && (sticky || (kept & 1u)))) ++kept;
  }
  if (biased < 1) return float_of(sign | (uint32_t)kept); /* reaching 2^23 makes it normal */
  if (kept == ((uint64_t)1 << 24)) {
    kept >>= 1;
    ++biased;
  }
  if (biased >= 255) return float_of(sign | 0x7F800000u);
  return float_of(sign | ((uint32_t)biased << 23) | ((uint32_t)kept & 0x7FFFFFu));
}

/* A finite nonzero float as m * 2^e with m < 2^24 integral. */
static void unpack(uint32_t u, uint64_t* m, int32_t* e) {
  uint32_t ex = (u >> 23) & 0xFFu, mant = u & 0x7FFFFFu;
  *m = ex ? (mant | 0x800000u) : mant;
  *e = (ex ? (int32_t)ex : 1) - 150;
}

float __hexagon_divsf3(float a, float b) {
  uint32_t ua = bits_of(a), ub = bits_of(b), sign = (ua ^ ub) & 0x80000000u;
  uint32_t aa = ua & 0x7FFFFFFFu, ab = ub & 0x7FFFFFFFu;
  if (aa > 0x7F800000u || ab > 0x7F800000u) return NAN;
  if (aa == 0x7F800000u) return ab == 0x7F800000u ? NAN : float_of(sign | 0x7F800000u);
  if (ab == 0x7F800000u) return float_of(sign);
  if (ab == 0) return aa == 0 ? NAN : float_of(sign | 0x7F800000u);
  if (aa == 0) return float_of(sign);
  uint64_t ma, mb, rem;
  int32_t ea, eb;
  unpack(aa, &ma, &ea);
  unpack(ab, &mb, &eb);
  /* ma << 40 / mb keeps at least 40 - 24 + 1 > 26 quotient bits even for a subnormal mb */
  uint64_t q = udivmod64(ma << 39, mb, &rem);
  return round_pack(sign, q, ea - eb - 39, rem != 0);
}
float __hexagon_fast_divsf3(float a, float b) {
  return __hexagon_divsf3(a, b);
}

static uint64_t isqrt64(uint64_t n, int* inexact) {
  uint64_t r = 0, bit = (uint64_t)1 << 62;
  while (bit > n) bit >>= 2;
  while (bit) {
    if (n >= r + bit) {
      n -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  *inexact = n != 0;
  return r;
}

float sqrtf(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) == 0 || u == 0x7F800000u) return x;
  if (u > 0x7F800000u && u < 0x80000000u) return x;
  if (u & 0x80000000u) return NAN;
  uint64_t m;
  int32_t e;
  unpack(u, &m, &e);
  while (m < 0x800000u) { /* normalise subnormals, so the root keeps its 24 bits */
    m <<= 1;
    --e;
  }
  if (e & 1) {
    m <<= 1;
    --e;
  }
  int inexact;
  uint64_t r = isqrt64(m << 38, &inexact); /* m < 2^25, so m << 38 < 2^63 */
  return round_pack(0, r, (e - 38) >> 1, inexact);
}
float __hexagon_sqrtf(float x) {
  return sqrtf(x);
}

float fabsf(float x) {
  return float_of(bits_of(x) & 0x7FFFFFFFu);
}

float truncf(float x) {
  uint32_t u = bits_of(x), ex = (u >> 23) & 0xFFu;
  if (ex >= 150) return x; /* integral already, or inf / NaN */
  if (ex < 127) return float_of(u & 0x80000000u);
  return float_of(u & ~((1u << (150 - ex)) - 1u));
}
float floorf(float x) {
  float t = truncf(x);
  return (x < 0 && t != x) ? t - 1.0f : t;
}
float ceilf(float x) {
  float t = truncf(x);
  return (x > 0 && t != x) ? t + 1.0f : t;
}
/* Half to even: adding and subtracting 2^23 rounds in the default mode. */
float nearbyintf(float x) {
  uint32_t u = bits_of(x);
  if ((u & 0x7FFFFFFFu) >= 0x4B000000u) return x;
  volatile float big = 8388608.0f;
  float r = (fabsf(x) + big) - big;
  return float_of(bits_of(r) | (u & 0x80000000u));
}

float fmodf(float x, float y) {
  uint32_t ux = bits_of(x), uy = bits_of(y), sign = ux & 0x80000000u;
  uint32_t ax = ux & 0x7FFFFFFFu, ay = uy & 0x7FFFFFFFu;
  if (ax >= 0x7F800000u || ay > 0x7F800000u || ay == 0) return NAN;
  if (ax < ay) return x;
  uint64_t mx, my;
  int32_t ex, ey;
  unpack(ax, &mx, &ex);
  unpack(ay, &my, &ey);
  for (; ex > ey; --ex) { /* exact: the remainder of mx * 2^(ex-ey) by my, one bit at a time */
    if (mx >= my) mx -= my;
    mx <<= 1;
  }
  if (mx >= my) mx -= my;
  return round_pack(sign, mx, ey, 0);
}

/* ---- transcendental functions ---- */

static float scale_by_power_of_two(float x, int32_t k) {
  while (k > 127) {
    x *= 1.70141183e38f; /* 2^127 */
    k -= 127;
  }
  while (k < -126) {
    x *= 1.17549435e-38f; /* 2^-126 */
    k += 126;
  }
  return x * float_of((uint32_t)(k + 127) << 23);
}

float expf(float x) {
  if (x != x) return x;
  if (x > 88.7228394f) return INFINITY;
  if (x < -103.972084f) return 0.0f;
  float k = nearbyintf(x * 1.44269504f);
  float r = (x - k * 0.693145752f) - k * 1.42860677e-6f; /* ln 2 in two parts */
  float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.66666667e-1f +
                                          r * (4.16666667e-2f +
                                               r * (8.33333333e-3f +
                                                    r * (1.38888889e-3f + r * 1.98412698e-4f))))));
  return scale_by_power_of_two(p, (int32_t)k);
}

float logf(float x) {
  uint32_t u = bits_of(x);
  if (x != x) return x;
  if (u & 0x80000000u) return (u & 0x7FFFFFFFu) ? NAN : -INFINITY;
  if (u == 0) return -INFINITY;
  if (u == 0x7F800000u) return x;
  int32_t e = 0;
  if (u < 0x800000u) { /* subnormal: scale by 2^25 first */
    u = bits_of(x * 33554432.0f);
    e = -25;
  }
  e += (int32_t)(u >> 23) - 127;
  float m = float_of((u & 0x7FFFFFu) | 0x3F800000u); /* [1, 2) */
  if (m > 1.41421356f) {
    m *= 0.5f;
    ++e;
  }
  float f = m - 1.0f, s = f / (2.0f + f), s2 = s * s; /* log m = 2 atanh(s) */
  float series =
      s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9 + s2 * (1.0f / 11)))));
  float log_m = 2.0f * s + 2.0f * s * series;
  return (float)e * 0.693145752f + (log_m + (float)e * 1.42860677e-6f);
}

float tanhf(float x) {
  if (x != x) return x;
  float a = fabsf(x);
  if (a > 9.0f) return x > 0 ? 1.0f : -1.0f;
  float t;
  if (a < 0.25f) { /* the series keeps small values' relative accuracy */
    float a2 = a * a;
    t = a *
        (1.0f + a2 * (-1.0f / 3 + a2 * (2.0f / 15 + a2 * (-17.0f / 315 + a2 * (62.0f / 2835)))));
  } else {
    float e = expf(2.0f * a);
    t = 1.0f - 2.0f / (e + 1.0f);
  }
  return x < 0 ? -t : t;
}

/* erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2): a Chebyshev fit with relative error below
   1.2e-7 for every z >= 0; below 0.5 the Maclaurin series is used, which is more accurate there. */
float erff(float x) {
  if (x != x) return x;
  float z = fabsf(x), r;
  if (z < 0.5f) {
    float z2 = z * z;
    r = 1.12837917f * z *
        (1.0f +
         z2 * (-1.0f / 3 +
               z2 * (1.0f / 10 + z2 * (-1.0f / 42 + z2 * (1.0f / 216 + z2 * (-1.0f / 1320))))));
  } else if (z > 4.0f) {
    r = 1.0f;
  } else {
    float t = 1.0f / (1.0f + 0.5f * z);
    float p =
        -z * z - 1.26551223f +
        t * (1.00002368f +
             t * (0.37409196f +
                  t * (0.09678418f +
                       t * (-0.18628806f +
                            t * (0.27886807f + t * (-1.13520398f +
                                                    t * (1.48851587f + t * (-0.82215223f +
                                                                            t * 0.17087277f))))))));
    r = 1.0f - t * expf(p);
  }
  return x < 0 ? -r : r;
}

/* x - k pi/2 with pi/2 in three parts, then polynomials on [-pi/4, pi/4]. */
static float reduce_quarter(float x, int32_t* quadrant) {
  float k = nearbyintf(x * 0.636619772f);
  *quadrant = (int32_t)k & 3;
  return ((x - k * 1.5703125f) - k * 4.83751297e-4f) - k * 7.54978942e-8f;
}
static float sin_poly(float r) {
  float r2 = r * r;
  return r + r * r2 *
                 (-1.66666667e-1f +
                  r2 * (8.33333333e-3f +
                        r2 * (-1.98412698e-4f + r2 * (2.75573192e-6f + r2 * -2.50521084e-8f))));
}
static float cos_poly(float r) {
  float r2 = r * r;
  return 1.0f +
         r2 * (-0.5f + r2 * (4.16666667e-2f + r2 * (-1.38888889e-3f +
                                                    r2 * (2.48015873e-5f + r2 * -2.75573192e-7f))));
}
float sinf(float x) {
  if (x != x || fabsf(x) == INFINITY) return NAN;
  int32_t q;
  float r = reduce_quarter(x, &q);
  return q == 0 ? sin_poly(r) : q == 1 ? cos_poly(r) : q == 2 ? -sin_poly(r) : -cos_poly(r);
}
float cosf(float x) {
  if (x != x || fabsf(x) == INFINITY) return NAN;
  int32_t q;
  float r = reduce_quarter(x, &q);
  return q == 0 ? cos_poly(r) : q == 1 ? -sin_poly(r) : q == 2 ? -cos_poly(r) : sin_poly(r);
}

/* C99's pow: special cases first, then exp(y log|x|) with the sign of an odd integral power. */
float powf(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (x != x || y != y) return NAN;
  float ax = fabsf(x);
  int integral = truncf(y) == y,
      odd = integral && fabsf(y) < 16777216.0f && ((int32_t)fmodf(fabsf(y), 2.0f) == 1);
  if (x < 0 && !integral && ax != INFINITY) return NAN;
  if (ax == 0.0f) {
    float r = y < 0 ? INFINITY : 0.0f;
    return odd ? float_of(bits_of(r) | (bits_of(x) & 0x80000000u)) : r;
  }
  float r = expf(y * logf(ax));
  return (x < 0 && odd) ? -r : r;
}

/* ---- HVX dot products ---- */

static int32_t sum_words(HVX_Vector v) {
  int32_t w[32];
  memcpy(w, &v, 128);
  int32_t s = 0;
  for (int i = 0; i < 32; ++i) s = (int32_t)((uint32_t)s + (uint32_t)w[i]);
  return s;
}

int32_t rlx_hvx_dot_i8(const int8_t* a, const int8_t* b, int64_t n) {
  HVX_Vector acc = Q6_V_vzero();
  int64_t i = 0;
  for (; i + HVX_LANES <= n; i += HVX_LANES) {
    HVX_Vector va, vb;
    memcpy(&va, a + i, HVX_LANES); /* unaligned loads (vmemu) */
    memcpy(&vb, b + i, HVX_LANES);
    acc = Q6_Vw_vrmpyacc_VwVbVb(acc, va, vb); /* 4 byte products into each word lane */
  }
  uint32_t s = (uint32_t)sum_words(acc);
  for (; i < n; ++i) s += (uint32_t)((int32_t)a[i] * (int32_t)b[i]);
  return (int32_t)s;
}

int32_t rlx_hvx_dot_i16(const int16_t* a, const int16_t* b, int64_t n) {
  HVX_VectorPair acc = Q6_W_vzero();
  int64_t i = 0;
  for (; i + HVX_LANES / 2 <= n; i += HVX_LANES / 2) {
    HVX_Vector va, vb;
    memcpy(&va, a + i, HVX_LANES);
    memcpy(&vb, b + i, HVX_LANES);
    acc = Q6_Ww_vmpyacc_WwVhVh(acc, va, vb); /* exact 32-bit products, even and odd lanes */
  }
  uint32_t s = (uint32_t)sum_words(Q6_Vw_vadd_VwVw(Q6_V_lo_W(acc), Q6_V_hi_W(acc)));
  for (; i < n; ++i) s += (uint32_t)((int32_t)a[i] * (int32_t)b[i]);
  return (int32_t)s;
}

/* ---- Linux syscalls (qemu-user): trap0(#1), number in r6, arguments in r0.. ---- */

static long syscall4(long number, long a0, long a1, long a2, long a3) {
  register long r0 __asm__("r0") = a0;
  register long r1 __asm__("r1") = a1;
  register long r2 __asm__("r2") = a2;
  register long r3 __asm__("r3") = a3;
  register long r6 __asm__("r6") = number;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r6) : "memory");
  return r0;
}

enum { kOpenAt = 56, kClose = 57, kRead = 63, kWrite = 64, kExit = 93 };
enum { kAtCwd = -100, kWriteCreate = 01 | 0100 | 01000 }; /* O_WRONLY | O_CREAT | O_TRUNC */

void rlx_exit(int code) {
  syscall4(kExit, code, 0, 0, 0);
  for (;;) {
  }
}

void rlx_read_file(const char* path, void* data, int64_t bytes) {
  long fd = syscall4(kOpenAt, kAtCwd, (long)path, 0, 0);
  if (fd < 0) rlx_exit(3);
  for (int64_t done = 0; done < bytes;) {
    long got = syscall4(kRead, fd, (long)((char*)data + done), (long)(bytes - done), 0);
    if (got <= 0) rlx_exit(4);
    done += got;
  }
  syscall4(kClose, fd, 0, 0, 0);
}

void rlx_write_file(const char* path, const void* data, int64_t bytes) {
  long fd = syscall4(kOpenAt, kAtCwd, (long)path, kWriteCreate, 0644);
  if (fd < 0) rlx_exit(5);
  for (int64_t done = 0; done < bytes;) {
    long put = syscall4(kWrite, fd, (long)((const char*)data + done), (long)(bytes - done), 0);
    if (put <= 0) rlx_exit(6);
    done += put;
  }
  syscall4(kClose, fd, 0, 0, 0);
}

/* What clang emits for large struct copies and zeroing. */
void* memset(void* dst, int value, unsigned long n) {
  unsigned char* d = dst;
  for (unsigned long i = 0; i < n; ++i) d[i] = (unsigned char)value;
  return dst;
}
#undef memcpy
void* memcpy(void* dst, const void* src, unsigned long n) {
  unsigned char* d = dst;
  const unsigned char* s = src;
  for (unsigned long i = 0; i < n; ++i) d[i] = s[i];
  return dst;
}
