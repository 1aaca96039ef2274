// What the metal target's MSL uses, defined in C++ so the system compiler builds the very text
// the target emits and the tests run it on the cpu (msl_on_cpu_api.h). This proves the kernels'
// semantics (indexing, rounding, reductions, barriers, bounds) on the MSL text; it is not Apple's
// compiler or GPU. The stand-ins:
//  * address spaces (`device`, `constant`) are nothing; `threadgroup` is `static`, so the 64
//    threads of a group share the arrays a kernel declares (groups run one at a time);
//  * `half` and `bfloat` are 16-bit types converting through rlx/core/half.h (round to nearest
//    even, as Metal's conversions do);
//  * `precise::` math is the C library's; threadgroup_barrier is a std::barrier over the group;
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

// Calls kernel `f` with its buffer parameters from `buffers` in order and its index parameters
// (the dialect's rlx_gid, rlx_lid, rlx_group, in that order) from `ids`.
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
  const uint ids[3] = {gid, lid, group};
  std::tuple<P...> args{rlx_argument<P>(buffers, next_buffer, ids, next_id)...};  // in order
  std::apply(f, args);
}

}  // namespace metal

#define kernel
#define device
#define constant const
#define threadgroup static
