// gpu_host::RecordingCache: a run on buffers seen before replays their recording, alternating
// sets (a training step's parameters, two steps apart) keep theirs, and past kKept sets the least
// recently used recording is the one dropped.
#include <gtest/gtest.h>

#include <memory>

#include "recording_cache.h"

namespace rlx::gpu_host {
namespace {

// A recording that counts the live ones and says which set it was made for.
struct Work final : RecordedWork {
  explicit Work(int id, int& live) : id(id), live(live) { ++live; }
  ~Work() override { --live; }
  int id;
  int& live;
};

int a = 0, b = 0, c = 0;
RecordingCache::Key key(const int& buffer) {
  return {&buffer, nullptr};
}

int id_of(RecordedWork* w) {
  return w ? static_cast<Work*>(w)->id : -1;
}

TEST(RecordingCache, AlternatingBufferSetsReplayTheirOwnRecordings) {
  int live = 0;
  RecordingCache cache;
  int recordings = 0;
  for (int step = 0; step < 10; ++step) {
    const int& params = step % 2 ? a : b;  // the sets swap every step
    if (!cache.find(key(params)))
      cache.add(key(params), std::make_unique<Work>(recordings++, live));
    EXPECT_EQ(id_of(cache.find(key(params))), step % 2 ? 1 : 0);
  }
  EXPECT_EQ(recordings, 2);
  EXPECT_EQ(live, 2);
}

TEST(RecordingCache, DropsTheLeastRecentlyUsedRecordingOnly) {
  int live = 0;
  RecordingCache cache;
  int buffers[RecordingCache::kKept + 1] = {};
  for (size_t i = 0; i < RecordingCache::kKept; ++i)
    cache.add(key(buffers[i]), std::make_unique<Work>(static_cast<int>(i), live));
  ASSERT_EQ(id_of(cache.find(key(buffers[0]))), 0);  // the first is now the most recent
  cache.add(key(buffers[RecordingCache::kKept]), std::make_unique<Work>(99, live));
  EXPECT_EQ(live, static_cast<int>(RecordingCache::kKept));
  EXPECT_EQ(cache.find(key(buffers[1])), nullptr);  // the least recently used went
  EXPECT_EQ(id_of(cache.find(key(buffers[0]))), 0);
  EXPECT_EQ(id_of(cache.find(key(buffers[RecordingCache::kKept]))), 99);
  EXPECT_EQ(id_of(cache.find(key(buffers[2]))), 2);
}

TEST(RecordingCache, AKeyDiffersByAnyBuffer) {
  int live = 0;
  RecordingCache cache;
  cache.add({&a, &b}, std::make_unique<Work>(1, live));
  EXPECT_EQ(cache.find({&a, &c}), nullptr);
  EXPECT_EQ(cache.find({&b, &a}), nullptr);
  EXPECT_EQ(id_of(cache.find({&a, &b})), 1);
}

}  // namespace
}  // namespace rlx::gpu_host
