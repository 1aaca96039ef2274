/* What a freestanding Hexagon program of rlx needs besides the compiler: there is no C library and
   no libm on the target (only _start and Linux syscalls under qemu-hexagon), so rlx_hexagon_rt.c
   defines the float math the kernels call, the division helpers clang's Hexagon backend calls
   (__hexagon_divsi3, ...) and the file I/O of the driver. f32 only: v67 HVX has no float lanes and
   the target refuses f64. Included by every generated file instead of <math.h> and <string.h>. */
#ifndef RLX_HEXAGON_RT_H
#define RLX_HEXAGON_RT_H
#include <stdbool.h>
#include <stdint.h>

#define memcpy __builtin_memcpy
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")

/* The condition of the kernels' selects, made opaque to the optimiser (see hexagon_dialect.cpp):
   a predicate moved through a register costs one instruction, a lost NaN a wrong answer. */
static inline int rlx_keep(int c) {
  __asm__("" : "+r"(c));
  return c;
}

float fabsf(float x);
float floorf(float x);
float ceilf(float x);
float truncf(float x);
float nearbyintf(float x);
float sqrtf(float x);
float fmodf(float x, float y);
float expf(float x);
float logf(float x);
float tanhf(float x);
float erff(float x);
float sinf(float x);
float cosf(float x);
float powf(float x, float y);

/* Dot products of n contiguous elements with 32-bit accumulation in HVX (128-byte vectors): the
   sum wraps modulo 2^32 like the kernels' integer arithmetic, so truncating it to a narrower
   output gives the loop kernel's bits. */
int32_t rlx_hvx_dot_i8(const int8_t* a, const int8_t* b, int64_t n);
int32_t rlx_hvx_dot_i16(const int16_t* a, const int16_t* b, int64_t n);

/* The driver's I/O: whole files into and out of static buffers; a failure exits with a code
   that names the step (the host reports it). */
void rlx_read_file(const char* path, void* data, int64_t bytes);
void rlx_write_file(const char* path, const void* data, int64_t bytes);
void rlx_exit(int code) __attribute__((noreturn));
#endif
