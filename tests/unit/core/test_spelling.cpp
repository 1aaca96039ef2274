// The "did you mean" search the CLI and the registry share, on slips worked out by hand.
#include <gtest/gtest.h>

#include "rlx/core/spelling.h"

namespace rlx {
namespace {

TEST(Spelling, EditDistanceCountsSwappedNeighboursAsOneSlip) {
  EXPECT_EQ(edit_distance("run", "run"), 0u);
  EXPECT_EQ(edit_distance("rnu", "run"), 1u);       // a swap
  EXPECT_EQ(edit_distance("taget", "target"), 1u);  // a letter left out
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "cpu"), 3u);
}

TEST(Spelling, ClosestNameIsASlipNotAnotherWord) {
  const std::vector<std::string> targets = {"cpu", "gpu", "vulkan", "opengl", "webgpu"};
  EXPECT_EQ(closest_name("vulcan", targets), "vulkan");
  EXPECT_EQ(closest_name("cpuu", targets), "cpu");
  EXPECT_EQ(closest_name("rnu", std::vector<std::string>{"run", "info", "bench"}), "run");
  // One edit of a three-letter name is a slip; two make another name.
  EXPECT_EQ(closest_name("tpu", std::vector<std::string>{"cpu"}), "cpu");
  EXPECT_EQ(closest_name("tpx", std::vector<std::string>{"cpu"}), std::nullopt);
  EXPECT_EQ(closest_name("xyz", targets), std::nullopt);
  EXPECT_EQ(closest_name("metal", targets), std::nullopt);
}

}  // namespace
}  // namespace rlx
