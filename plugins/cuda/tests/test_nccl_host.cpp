// The host side of the cuda target's NCCL collectives, which needs no GPU: the id-file
// rendezvous (two threads as two ranks on a temporary folder, the timeout's message, the
// rendezvous text), which GPU a rank picks (RLX_LOCAL_RANK, then mpirun's local rank), and the
// refusals where NCCL or the device is missing, each with its reason.
#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "cuda_device.h"
#include "nccl_rendezvous.h"
#include "rlx/core/error.h"
#include "test_support.h"

namespace rlx {
namespace {

namespace fs = std::filesystem;

std::string id_of(char fill) {
  return std::string(128, fill);
}

// Rank 1 waits for the id before rank 0 has written it; both end with the same bytes, and the
// folder holds the id file and no temporary one.
TEST(NcclRendezvous, TwoRanksShareOneIdThroughTheFolder) {
  test::TempDir dir;
  const fs::path folder = dir.path() / "rdv";  // created by the publisher
  std::string got;
  std::thread waiter([&] { got = cuda::await_unique_id(folder, "world", 128, 10, "rank 1 of 2"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string id = id_of('\x5a');
  id[0] = '\0';  // ids are bytes, NULs included
  cuda::publish_unique_id(folder, "world", id);
  waiter.join();
  EXPECT_EQ(got, id);
  int files = 0;
  for (const auto& e : fs::directory_iterator(folder)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "nccl-world-id");
  }
  EXPECT_EQ(files, 1);
}

// Groups publish under their own keys: a rank waiting for one never takes another's id.
TEST(NcclRendezvous, EachCommunicatorHasItsOwnIdFile) {
  test::TempDir dir;
  cuda::publish_unique_id(dir.path(), "world", id_of('w'));
  cuda::publish_unique_id(dir.path(), "world.block:2.from2", id_of('b'));
  EXPECT_EQ(cuda::await_unique_id(dir.path(), "world.block:2.from2", 128, 1, "rank 1 of 2"),
            id_of('b'));
  EXPECT_EQ(cuda::await_unique_id(dir.path(), "world", 128, 1, "rank 1 of 2"), id_of('w'));
  EXPECT_EQ(cuda::unique_id_path(dir.path(), "world").filename(), "nccl-world-id");
}

// Nobody publishes: the wait ends at the timeout with the rank, the folder and the file named.
TEST(NcclRendezvous, AnIdThatNeverComesTimesOutNamingTheRankAndFolder) {
  test::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  try {
    cuda::await_unique_id(dir.path(), "world", 128, 0.3, "rank 3 of 4");
    FAIL() << "an id was found in an empty folder";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::kDevice) << m;
    EXPECT_NE(m.find("rank 3 of 4"), std::string::npos) << m;
    EXPECT_NE(m.find(dir.path().string()), std::string::npos) << m;
    EXPECT_NE(m.find("nccl-world-id"), std::string::npos) << m;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(s, 0.3);
  EXPECT_LT(s, 5.0);
}

// A file of the wrong size (a torn or foreign write) is not taken for an id.
TEST(NcclRendezvous, AShortFileIsNotAnId) {
  test::TempDir dir;
  std::ofstream(cuda::unique_id_path(dir.path(), "world")) << "short";
  EXPECT_THROW(cuda::await_unique_id(dir.path(), "world", 128, 0.2, "rank 1 of 2"), Error);
}

TEST(NcclRendezvous, TheRendezvousTextIsTheCpuTargetsForm) {
  cuda::NcclEndpoint e =
      cuda::parse_nccl_rendezvous("file:///tmp/job?timeout=12.5&transport=tcp&host=10.0.0.1");
  EXPECT_EQ(e.folder, fs::path("/tmp/job"));
  EXPECT_EQ(e.timeout_s, 12.5);
  EXPECT_EQ(cuda::parse_nccl_rendezvous("file:///tmp/job").timeout_s, 60);
  for (const char* bad : {"tcp://host:1234", "file://", "file:///tmp/job?timeout=0",
                          "file:///tmp/job?timeout=x", "file:///tmp/job?port=1"}) {
    try {
      cuda::parse_nccl_rendezvous(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUser) << bad << ": " << e.what();
    }
  }
}

// Sets or clears an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CudaRankDevice, TheLocalRankComesFromRlxThenMpirun) {
  {
    ScopedEnv a("RLX_LOCAL_RANK", "3"), b("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    EXPECT_EQ(cuda::local_rank_from_env(), 3);
  }
  {
    ScopedEnv a("RLX_LOCAL_RANK", nullptr), b("OMPI_COMM_WORLD_LOCAL_RANK", "2");
    EXPECT_EQ(cuda::local_rank_from_env(), 2);
  }
  {
    ScopedEnv a("RLX_LOCAL_RANK", nullptr), b("OMPI_COMM_WORLD_LOCAL_RANK", nullptr);
    EXPECT_EQ(cuda::local_rank_from_env(), 0);
  }
}

// `rlx explain` of an AllReduce for cuda (a process of its own, so RLX_NCCL is read afresh).
std::string explain_all_reduce(const std::string& env) {
  test::TempDir dir;
  const fs::path g = dir.path() / "g.rlx";
  std::ofstream(g) << "graph @g(%x: f32[4]) {\n  %s = AllReduce(%x) {reduce = \"mean\"} : "
                      "f32[4]\n  return %s\n}\n";
  const std::string cmd = fmt::format("{} '{}' --plugin-path '{}' explain '{}' --target cuda 2>&1",
                                      env, RLX_BINARY, RLX_TEST_PLUGIN_DIR, g.string());
  std::string out;
  if (FILE* pipe = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    pclose(pipe);
  }
  return out;
}

// Without libnccl.so.2 the op is refused by name with the reason, on any machine; with it, it
// is claimed natively through NCCL (a device or not: compiling then needs the device).
TEST(CudaCollectiveRefusals, WithoutNcclTheOpIsRefusedWithTheReason) {
  const std::string refused = explain_all_reduce("RLX_NCCL=/nonexistent/libnccl.so.2");
  EXPECT_NE(refused.find("AllReduce"), std::string::npos) << refused;
  EXPECT_NE(refused.find("libnccl.so.2 not found"), std::string::npos) << refused;
  const char* env = std::getenv("RLX_NCCL");
  if (!dlopen(env && *env ? env : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL))
    GTEST_SKIP() << "NCCL (libnccl.so.2) is not installed here, so the claim cannot be checked";
  const std::string claimed = explain_all_reduce("");
  EXPECT_NE(claimed.find("native     NCCL"), std::string::npos) << claimed;
}

// Without a CUDA device, opening a channel on cuda fails with the reason (never a channel that
// runs elsewhere).
TEST(CudaCollectiveRefusals, WithoutADeviceTheChannelIsRefusedWithTheReason) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "this machine has a CUDA driver (libcuda.so.1)";
  }
  test::TempDir dir;
  try {
    test::target_named("cuda")->open_channel(
        {0, 2, fmt::format("file://{}?timeout=1", dir.path().string())});
    FAIL() << "a cuda channel opened without a device";
  } catch (const Error& e) {
    const std::string m = e.what();
    // NCCL is looked for first: where it is missing, that is the reason given.
    const bool named = m.find("libcuda.so.1 not found") != std::string::npos ||
                       m.find("libnccl.so.2 not found") != std::string::npos;
    EXPECT_TRUE(named) << m;
    EXPECT_NE(m.find("cuda collectives"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace rlx
