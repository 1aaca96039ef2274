// What the metal target's MSL uses, defined in C++ so the system compiler builds the very text
// the target emits and the tests run it on the cpu (msl_on_cpu_api.h). This proves the kernels'
// semantics (indexing, rounding, reductions, barriers, bounds) on the MSL text; it is not Apple's
// compiler or GPU. The stand-ins:
//  * address spaces (`device`, `constant`) are nothing; `threadgroup` is `static`, so the 64
//    threads of a group share the arrays a kernel declares (groups run one at a time);
//  * `half` and `bfloat` are 16-bit types converting through rlx/core/half.h (round to nearest
//    even, as Metal's conversions do);
//  * `precise::` math is the C library's; threadgroup_barrier is a std::barrier over the group;
//  * simd_sum, simd_max, simd_min and simd_product exchange the 32 lanes' values through slots
//    of their SIMD group (lanes lid % 32 of SIMD group lid / 32) and a std::barrier over those
//    32 lanes: every lane gets the reduction of all 32, as on the GPU, but not in the GPU's
//    order (below);
//  * [[buffer(i)]] and the thread-position attributes are ignored (unknown attributes; the
//    module is compiled with -Wno-attributes), the host passes the indices as the parameters.
// Reached as <metal_stdlib> (the file of that name next to this one).
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "msl_on_cpu_sync.h"
#include "rlx/core/half.h"

namespace metal {

using uchar = unsigned char;
using ushort = unsigned short;
using uint = unsigned int;
using ulong = unsigned long;
static_assert(sizeof(long) == 8, "MSL's long is 64 bits");

struct half {
  uint16_t bits;
  half() = default;
  half(float f) : bits(rlx::f32_to_f16(f)) {}
  operator float() const { return rlx::f16_to_f32(bits); }
};
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  bfloat(float f) : bits(rlx::f32_to_bf16(f)) {}
  operator float() const { return rlx::bf16_to_f32(bits); }
};
static_assert(sizeof(half) == 2 && sizeof(bfloat) == 2, "16-bit storage");

namespace precise {
using std::cos;
using std::exp;
using std::fmod;
using std::log;
using std::pow;
using std::sin;
using std::sqrt;
using std::tanh;
}  // namespace precise
using std::ceil;
using std::fabs;
using std::floor;
using std::fma;
using std::rint;

enum class mem_flags { mem_none, mem_device, mem_threadgroup };
enum memory_order { memory_order_relaxed };
using atomic_int = std::atomic<int>;
inline bool atomic_compare_exchange_weak_explicit(atomic_int* object, int* expected, int desired,
                                                  memory_order, memory_order) {
  return object->compare_exchange_weak(*expected, desired, std::memory_order_relaxed);
}

// The barrier of the group the calling thread belongs to (set by the entry trampoline).
inline thread_local std::barrier<>* rlx_group_barrier = nullptr;
inline void threadgroup_barrier(mem_flags) { rlx_group_barrier->arrive_and_wait(); }

// The SIMD group the calling thread belongs to and its lane there (set by the entry trampoline).
inline thread_local rlx::metal::test::SimdGroupSync* rlx_simd_sync = nullptr;
inline thread_local uint rlx_simd_lane = 0;

// What MSL's SIMD-group reductions return: the reduction over the SIMD group's lanes, the same
// value on every lane. Each lane puts its value in its slot; after the 32 have arrived, each
// reduces the 32 slots in lane order (so all get the same bits) and a second wait keeps the slots
// until everyone has read them. This reproduces the result, not the hardware's reduction order:
// Apple's GPU may add in another order, so float sums may differ in the last bits (the tests
// compare with tolerances). Every lane of the SIMD group must call it, as the kernels do (they
// keep SIMD-group control flow uniform); a lane that did not would leave the others waiting here,
// where the GPU would reduce over the active lanes only.
template <typename T, typename Op>
T rlx_simd_reduce(T x, Op op) {
  static_assert(sizeof(T) <= sizeof(rlx_simd_sync->slots[0]), "a slot holds one scalar");
  rlx::metal::test::SimdGroupSync& s = *rlx_simd_sync;
  std::memcpy(s.slots[rlx_simd_lane], &x, sizeof(T));
  s.barrier.arrive_and_wait();
  T r;
  std::memcpy(&r, s.slots[0], sizeof(T));
  for (int l = 1; l < rlx::metal::test::kStandInSimdWidth; ++l) {
    T v;
    std::memcpy(&v, s.slots[l], sizeof(T));
    r = op(r, v);
  }
  s.barrier.arrive_and_wait();
  return r;
}
template <typename T>
T simd_sum(T x) {
  return rlx_simd_reduce(x, [](T a, T b) { return a + b; });
}
// A NaN lane is passed over, as fmax does (the kernels do not depend on it: a NaN score makes its
// row's sum NaN either way).
template <typename T>
T simd_max(T x) {
  return rlx_simd_reduce(x, [](T a, T b) { return std::fmax(a, b); });
}

// As simd_max; the loop kernels' max and min count NaN lanes themselves (render.h's rule).
template <typename T>
T simd_min(T x) {
  return rlx_simd_reduce(x, [](T a, T b) { return std::fmin(a, b); });
}
template <typename T>
T simd_product(T x) {
  return rlx_simd_reduce(x, [](T a, T b) { return a * b; });
}

// Calls kernel `f` with its buffer parameters from `buffers` in order and its index parameters
// from `ids`: the dialect's rlx_gid, rlx_lid, rlx_group, then (a kernel with SIMD-group
// reductions) rlx_lane, rlx_simd and rlx_simds, in that order.
template <typename P>
P rlx_argument(void* const* buffers, size_t& next_buffer, const uint* ids, int& next_id) {
  if constexpr (std::is_pointer_v<P>)
    return static_cast<P>(buffers[next_buffer++]);
  else
    return static_cast<P>(ids[next_id++]);
}
template <typename... P>
void rlx_call(void (*f)(P...), void* const* buffers, uint gid, uint lid, uint group) {
  size_t next_buffer = 0;
  int next_id = 0;
  using rlx::metal::test::kStandInGroup;
  using rlx::metal::test::kStandInSimdWidth;
  const uint ids[6] = {gid, lid, group, lid % kStandInSimdWidth, lid / kStandInSimdWidth,
                       kStandInGroup / kStandInSimdWidth};
  std::tuple<P...> args{rlx_argument<P>(buffers, next_buffer, ids, next_id)...};  // in order
  std::apply(f, args);
}

}  // namespace metal

#define kernel
#define device
#define constant const
#define threadgroup static
