// std::vector whose storage starts on a cache line. Packed GEMM operands are read in 64-byte
// rows (AMX tile rows, zmm loads): from malloc's 16-byte alignment every such row straddles two
// lines, which doubled the loads and ran the AMX bf16 product at a fifth of its rate.
#pragma once
#include <cstddef>
#include <new>
#include <utility>
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

// The same for buffers every element of which is written before it is read (the int8 GEMM's
// rounded activations): resize() leaves new elements uninitialised instead of zeroing them, a
// pass over the whole buffer on every call otherwise.
template <typename T>
struct UninitializedCacheLineAllocator : CacheLineAllocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitializedCacheLineAllocator<U>;
  };
  UninitializedCacheLineAllocator() = default;
  template <typename U>
  UninitializedCacheLineAllocator(const UninitializedCacheLineAllocator<U>&) {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T>
using UninitializedAlignedVector = std::vector<T, UninitializedCacheLineAllocator<T>>;

}  // namespace rlx::cpu
