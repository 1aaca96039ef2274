// The CUDA C++ dialect (the cuda target, NVRTC) and its HIP twin (the rocm target, hiprtc or
// hipcc). CUDA C++ is C++ on the device, so this is the C table with what differs changed:
// `extern "C" __global__` entry points with one pointer per buffer, one thread per output element,
// __shared__ arrays and __syncthreads() for the cooperative kernels, infinities and bit casts from
// the intrinsics. HIP's kernel language is CUDA's (the same builtins, qualifiers and intrinsics),
// so the two dialects are one table and differ only in the headers their preludes start with.
#include <string>

#include "rlx/sdk/render.h"

namespace rlx::sdk {

const char* const kNvrtcStdintTypes = R"(typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
)";

namespace {

// NVRTC has no C library headers: the fixed-width integer types are declared when __CUDACC_RTC__
// is set and taken from <stdint.h> under nvcc, so the emitted .cu builds with both.
std::string cuda_headers() {
  return std::string("#ifdef __CUDACC_RTC__\n") + kNvrtcStdintTypes +
         "#else\n#include <stdint.h>\n#endif\n";
}

// hiprtc declares the HIP runtime's device side and the 32- and 64-bit <stdint.h> types itself
// (hiprtc 5.2's amd_hip_runtime.h: int32_t, uint32_t, int64_t, uint64_t) but has no system
// headers, so the narrower types are declared here (a repeated typedef of the same type is valid
// C++, so a hiprtc that has them too is not contradicted). hipcc, and NVRTC through the rocm
// target's HIP-on-CUDA header, get everything from hip/hip_runtime.h.
constexpr const char* kHipHeaders = R"(#ifdef __HIPCC_RTC__
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
#else
#include <hip/hip_runtime.h>
#endif
)";

// f16/bf16 are stored as their bits and computed in float (render.h), so every kernel rounds
// exactly like the host and needs neither cuda_fp16.h nor a device with f16 arithmetic. On an
// NVIDIA GPU (__CUDA_ARCH__: NVRTC, nvcc's device pass, HIP through NVRTC) the f16 conversions are
// the GPU's cvt instructions, which round to nearest even like the host (only a NaN's payload may
// differ); the software ones cost ten to twenty instructions an element and made 16-bit
// element-wise kernels compute-bound. Elsewhere (hiprtc for AMD) they are the C dialect's ports of
// core/src/ir/half.cpp with CUDA's bit casts. bf16 stays a shift and an add everywhere. A host
// compiles with --fmad=false (hiprtc: -ffp-contract=off): by default a * b + c is fused into one
// rounding, which would make generated code differ from the cpu target in the last bit. The
// helpers are the same text in CUDA C++ and HIP.
constexpr const char* kDeviceHelpers = R"(
#define RLX_DEVICE static __device__ __forceinline__

RLX_DEVICE float rlx_f16_to_f32(uint16_t h) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  uint32_t normal = ((exp + 112u + (exp == 0x1Fu) * 112u) << 23) | (mant << 13);
  uint32_t small = __float_as_uint((float)mant * 5.9604644775390625e-8f);
  uint32_t is_small = 0u - (uint32_t)(exp == 0u);
  return __uint_as_float(sign | (small & is_small) | (normal & ~is_small));
#endif
}

RLX_DEVICE uint16_t rlx_f32_to_f16(float f) {
#ifdef __CUDA_ARCH__
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  uint32_t x = __float_as_uint(f), ax = x & 0x7FFFFFFFu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (ax >= 0x38800000u) {
    ax += 0xC8000FFFu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | (ax >> 13));
  }
  if (ax <= 0x33000000u) return sign;
  uint32_t e = ax >> 23, m = (ax & 0x7FFFFFu) | 0x800000u, shift = 126 - e;
  uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return (uint16_t)(sign | r);
#endif
}

RLX_DEVICE float rlx_bf16_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

RLX_DEVICE uint16_t rlx_f32_to_bf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7FFFu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* Integer power by squaring in unsigned arithmetic (wraps); negative exponents give 0 unless the
   base is 1 or -1. */
RLX_DEVICE int64_t rlx_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  for (; b; b >>= 1) {
    if (b & 1) r *= x;
    x *= x;
  }
  return (int64_t)r;
}
)";

// `name` is "cuda" or "hip"; `headers` the start of the prelude.
Dialect make_cuda_family(const char* name, const std::string& headers) {
  Dialect d = c_dialect();  // every dtype row of C holds in CUDA C++ with the prelude's typedefs
  d.name = name;
  d.infinity = "__int_as_float(0x7F800000)";
  d.nan = "__int_as_float(0x7FC00000)";
  // float and double overloads under C's names (expf, exp); nearbyint rounds half to even.
  d.prelude = headers + kDeviceHelpers;
  d.kernel_prefix = "extern \"C\" __global__ void";
  d.buffer_params = BufferParams::kOnePerBuffer;
  d.restrict_kw = "__restrict__";
  d.mapping = DomainMapping::kWorkItemPerOutput;
  // The flat index is composed in 64 bits (render_c casts group_id to the index type): a launch
  // may exceed 2^32 threads. Kernels whose offsets fit 31 bits index in int: a 64-bit division by
  // a constant is a dozen instructions, which in a memory-bound kernel outlast the loads.
  d.narrow_index_type = "int";
  d.max_outputs_per_item = 4;
  d.group_id = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
  d.local_id = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  d.group_size = {"blockDim.x", "blockDim.y", "blockDim.z"};
  d.shared_array = "__shared__ {type} {name}[{size}];";
  d.barrier = "__syncthreads();";
  d.group_index = "(int64_t)blockIdx.x";
  d.local_index = "threadIdx.x";
  // Hosts launch every kernel in blocks of 64 threads; the bound lets the compiler budget
  // registers for exactly that.
  d.fixed_group_size_attribute = "__launch_bounds__(64)";
  return d;
}

// NVIDIA's warps are 32 lanes that exchange registers with shuffles, so the cooperative kernels'
// sums (a norm's row statistics) reduce within each warp first and pass one value per warp
// through shared memory, as MSL's SIMD groups do, instead of every invocation adding all 64
// shared slots. (On an H100 a decode step's norms did not get measurably faster: one row of 1024
// is latency-bound either way.) The lane and warp are built-in variables, so these kernels take
// no extra parameters. HIP keeps shared memory alone: an AMD wavefront has 64 lanes.
Dialect with_warp_reductions(Dialect d) {
  d.prelude += R"(
RLX_DEVICE float rlx_warp_sum(float x) {
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}
RLX_DEVICE float rlx_warp_max(float x) {
  for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}
)";
  d.simd_sum = "rlx_warp_sum({x})";
  d.simd_max = "rlx_warp_max({x})";
  d.simd_lane = "(threadIdx.x & 31u)";
  d.simd_group = "(threadIdx.x >> 5)";
  d.simd_groups = "(blockDim.x >> 5)";
  // Work split by warps (render_norm's many short rows, a warp each; render_attention's rows of
  // a few queries, a warp per query) relies on the width.
  d.simd_width = 32;
  return d;
}

// Hopper's programmatic dependent launch (PTX griddepcontrol, sm_90 and later): a kernel the host
// launches as a dependent of the one before it may start while that one still runs, so its launch
// and whatever it reads that no kernel writes (a GEMV's weights) overlap the other's tail. Every
// kernel therefore waits for its producers before it reads or writes memory a kernel may touch,
// then lets its own dependents launch (one kernel ahead, not a chain). On an older GPU, and when
// the host launched the kernel normally, both instructions have nothing to wait for. The host
// launches a kernel as a dependent only when its text calls this (cuda_device.cpp).
Dialect with_dependent_launches(Dialect d) {
  d.prelude += R"(
RLX_DEVICE void rlx_await_producers() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
)";
  d.kernel_entry = "rlx_await_producers();";
  return d;
}

}  // namespace

const Dialect& cuda_dialect() {
  static const Dialect d =
      with_dependent_launches(with_warp_reductions(make_cuda_family("cuda", cuda_headers())));
  return d;
}

const Dialect& hip_dialect() {
  static const Dialect d = make_cuda_family("hip", kHipHeaders);
  return d;
}

}  // namespace rlx::sdk
