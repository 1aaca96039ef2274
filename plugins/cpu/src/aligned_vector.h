// std::vector whose storage starts on a cache line. Packed GEMM operands are read in 64-byte
// rows (AMX tile rows, zmm loads): from malloc's 16-byte alignment every such row straddles two
// lines, which doubled the loads and ran the AMX bf16 product at a fifth of its rate.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace rlx::cpu {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, std::size_t) { ::operator delete(p, kAlign); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace rlx::cpu
