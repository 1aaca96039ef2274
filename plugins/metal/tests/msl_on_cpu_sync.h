// What the threads of one group of the C++ stand-in share to wait for each other: the group's
// barrier (threadgroup_barrier) and, per SIMD group, a barrier and the slots its lanes exchange
// values through (simd_sum, simd_max). Shared by the kernels' side (msl_on_cpu.h) and the host's
// (msl_on_cpu_api.cpp), which makes one per group; no MSL macros here, so the host can include it.
#pragma once
#include <barrier>
#include <cstring>

namespace rlx::metal::test {

// Apple GPUs run SIMD groups of 32 threads; the stand-in splits its groups of 64 the same way,
// lanes by their index in the group (lane = lid % 32, SIMD group = lid / 32).
inline constexpr int kStandInGroup = 64;
inline constexpr int kStandInSimdWidth = 32;

struct SimdGroupSync {
  std::barrier<> barrier{kStandInSimdWidth};
  // One value per lane, as bytes wide enough for every scalar type a reduction takes.
  alignas(8) unsigned char slots[kStandInSimdWidth][8];
};

struct GroupSync {
  std::barrier<> barrier{kStandInGroup};
  SimdGroupSync simd[kStandInGroup / kStandInSimdWidth];
};

}  // namespace rlx::metal::test
