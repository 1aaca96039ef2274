// gpu_host::HostMemoryPool: blocks given back are handed out again for the same rounded size,
// at most keep_bytes are kept, and everything kept is released with the pool.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <stdexcept>

#include "host_memory_pool.h"

namespace rlx::gpu_host {
namespace {

// Counts what the pool asks of the "device".
struct FakeHost {
  int allocations = 0, releases = 0;
  std::set<void*> live;
  bool exhausted = false;
  HostMemoryPool pool(size_t keep_bytes) {
    return HostMemoryPool(
        [this](size_t bytes) -> void* {
          if (exhausted) return nullptr;
          void* p = std::aligned_alloc(64, bytes);
          ++allocations;
          live.insert(p);
          return p;
        },
        [this](void* p) {
          ++releases;
          live.erase(p);
          std::free(p);
        },
        keep_bytes);
  }
};

constexpr size_t kG = HostMemoryPool::kGranule;

TEST(HostMemoryPool, AGivenBackBlockServesTheNextRequestOfItsRoundedSize) {
  FakeHost host;
  {
    HostMemoryPool pool = host.pool(16 * kG);
    void* a = pool.take(3 * kG - 100);
    ASSERT_NE(a, nullptr);
    pool.give_back(a, 3 * kG - 100);
    EXPECT_EQ(pool.kept_bytes(), 3 * kG);
    EXPECT_EQ(pool.take(3 * kG), a);  // same granules: the same block, not a new one
    EXPECT_EQ(host.allocations, 1);
    void* b = pool.take(2 * kG);  // another size: a new block
    EXPECT_NE(b, a);
    EXPECT_EQ(host.allocations, 2);
    pool.give_back(a, 3 * kG);
    pool.give_back(b, 2 * kG);
    EXPECT_EQ(host.releases, 0);
  }
  EXPECT_EQ(host.releases, 2);  // the pool's end releases what it kept
  EXPECT_TRUE(host.live.empty());
}

TEST(HostMemoryPool, KeepsNoMoreThanItsLimit) {
  FakeHost host;
  HostMemoryPool pool = host.pool(4 * kG);
  void* a = pool.take(3 * kG);
  void* b = pool.take(3 * kG);
  pool.give_back(a, 3 * kG);
  pool.give_back(b, 3 * kG);  // 6 granules would exceed 4: released at once
  EXPECT_EQ(pool.kept_bytes(), 3 * kG);
  EXPECT_EQ(host.releases, 1);
  EXPECT_EQ(host.live.count(b), 0u);
}

TEST(HostMemoryPool, AnExhaustedOrFailingDeviceGivesNull) {
  FakeHost host;
  HostMemoryPool pool = host.pool(4 * kG);
  host.exhausted = true;
  EXPECT_EQ(pool.take(kG), nullptr);
  HostMemoryPool throwing([](size_t) -> void* { throw std::runtime_error("no memory"); },
                          [](void*) {});
  EXPECT_EQ(throwing.take(kG), nullptr);
}

}  // namespace
}  // namespace rlx::gpu_host
