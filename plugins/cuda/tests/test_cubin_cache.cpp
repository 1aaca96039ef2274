// The cuda target's on-disk module cache (sdk/cuda_host/module_cache.h), tested on its own: a compiled
// module is found again by content (source, architecture, compiler), never for another one, and an
// evicted entry is compiled again.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "module_cache.h"
#include "test_support.h"

namespace rlx::cuda {
namespace {

TEST(CudaCubinCache, ModulesAreFoundAgainByContentHash) {
  test::TempDir dir;
  setenv("RLX_CACHE_DIR", dir.path().c_str(), 1);
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return std::string(
               "\x7f"
               "ELF cubin ") +
           std::to_string(compiles);
  };
  CachedModule first = find_or_compile("kernel source", "sm_90", "nvrtc 13.0", compile);
  EXPECT_FALSE(first.hit);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(first.path.parent_path(), dir.path() / "kernels" / "cuda");
  EXPECT_EQ(test::read_file(first.path), first.bytes);
  EXPECT_EQ(test::read_file(std::filesystem::path(first.path).replace_extension(".cu")),
            "kernel source");

  CachedModule again = find_or_compile("kernel source", "sm_90", "nvrtc 13.0", compile);
  EXPECT_TRUE(again.hit);
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(again.bytes, first.bytes);

  // Another architecture, compiler or source is another module.
  EXPECT_FALSE(find_or_compile("kernel source", "sm_80", "nvrtc 13.0", compile).hit);
  EXPECT_FALSE(find_or_compile("kernel source", "sm_90", "nvrtc 12.8", compile).hit);
  EXPECT_FALSE(find_or_compile("other source", "sm_90", "nvrtc 13.0", compile).hit);
  EXPECT_EQ(compiles, 4);

  evict(first.path);
  CachedModule rebuilt = find_or_compile("kernel source", "sm_90", "nvrtc 13.0", compile);
  EXPECT_FALSE(rebuilt.hit);
  EXPECT_EQ(compiles, 5);
  unsetenv("RLX_CACHE_DIR");
}

}  // namespace
}  // namespace rlx::cuda
