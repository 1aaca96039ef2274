// The collective HIR ops on the cuda target through NCCL (plugins/cuda/src/collective_call.h),
// on the device. One rank on one GPU: AllReduce (sum, max, mean), AllGather, ReduceScatter,
// AllToAll and Broadcast give the rank's own values (what a communicator of one rank computes by
// hand), in f32 and f16. Two ranks on two GPUs (only where two exist): two processes, each on
// its own GPU (RLX_LOCAL_RANK), every op against values computed here from each rank's input,
// Send and Recv included. Each model runs twice, the second time into outputs full of garbage
// (and, where the run is recorded, from the CUDA graph). And the channel itself on device
// buffers. Skips, saying why, without a CUDA device or NCCL.
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

#include "rlx/core/error.h"
#include "rlx/core/half.h"
#include "rlx/core/ir_text.h"
#include "rlx/core/runtime.h"
#include "test_support.h"

extern char** environ;

namespace rlx {
namespace {

constexpr const char* kRankEnv = "RLX_NCCL_TEST_RANK";
constexpr const char* kFolderEnv = "RLX_NCCL_TEST_FOLDER";

std::shared_ptr<Target> cuda() {
  return test::target_named("cuda");
}

// Why the collectives cannot run here ("" when they can): no device, or no NCCL.
std::string missing() {
  Verdict v = cuda()->can_execute();
  if (!v.ok) return "no CUDA device: " + v.reason;
  const char* nccl = std::getenv("RLX_NCCL");
  if (!dlopen(nccl && *nccl ? nccl : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL))
    return "NCCL (libnccl.so.2) is not installed here";
  return "";
}

// CUDA devices the driver sees (0 without a driver).
int device_count() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<int (*)(int*)>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0) return 0;
  return n;
}

Tensor tensor_of(DType dt, std::vector<int64_t> shape, const std::vector<double>& v) {
  Tensor t(dt, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::kF16)
      t.as<uint16_t>()[i] = f32_to_f16(static_cast<float>(v[i]));
    else
      t.as<float>()[i] = static_cast<float>(v[i]);
  }
  return t;
}

// Runs `model` twice on x (the second time into garbage outputs) and checks each expected output
// element for element: exactly, since every value here (small integers and halves, their sums
// over two ranks, halves of those) is exact in f16 and f32.
void run_and_check(CompiledModel& model, const Tensor& x,
                   const std::map<std::string, std::vector<double>>& want,
                   const std::string& what) {
  NamedTensors outputs = model.run({{"x", x}});
  for (int run = 0; run < 2; ++run) {
    if (run == 1)
      for (auto& [name, t] : outputs) std::memset(t.data(), 0xFF, t.nbytes());
    if (run == 1) model.run({{"x", x}}, outputs);
    for (const auto& [name, values] : want) {
      ASSERT_TRUE(outputs.count(name)) << what << ": no output " << name;
      const std::vector<double> got = test::values(outputs.at(name));
      ASSERT_EQ(got.size(), values.size()) << what << " " << name;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], values[i]) << what << " " << name << "[" << i << "], run " << run + 1;
    }
  }
}

// -- one rank -------------------------------------------------------------------------------

class CudaCollectivesOneRank : public ::testing::TestWithParam<DType> {};

TEST_P(CudaCollectivesOneRank, EveryOpGivesTheRanksOwnValues) {
  if (std::string why = missing(); !why.empty()) GTEST_SKIP() << why;
  const DType dt = GetParam();
  test::TempDir dir;
  std::unique_ptr<Channel> channel =
      cuda()->open_channel({0, 1, fmt::format("file://{}/rdv?timeout=30", dir.path().string())});
  ASSERT_EQ(channel->world_size(), 1);
  const std::string x = fmt::format("{}[4,2]", dtype_name(dt));
  const std::string ir = fmt::format(
      "graph @one(%x: {0}) {{\n"
      "  %sum = AllReduce(%x) {{reduce = \"sum\"}} : {0}\n"
      "  %max = AllReduce(%x) {{reduce = \"max\"}} : {0}\n"
      "  %mean = AllReduce(%x) {{reduce = \"mean\"}} : {0}\n"
      "  %gather = AllGather(%x) {{world = 1}} : {0}\n"
      "  %scatter = ReduceScatter(%x) {{world = 1}} : {0}\n"
      "  %a2a = AllToAll(%x) {{world = 1}} : {0}\n"
      "  %bcast = Broadcast(%x) {{root = 0}} : {0}\n"
      "  return %sum, %max, %mean, %gather, %scatter, %a2a, %bcast\n}}\n",
      x);
  const std::vector<double> v = {-2.5, 0.5, 3, 7.25, -1, 0, 12, 0.125};
  // Over one rank: the sum, maximum and mean of one value are that value; gathering, scattering
  // and exchanging among one rank, and broadcasting from it, leave x as it is.
  std::map<std::string, std::vector<double>> want;
  for (const char* name : {"sum", "max", "mean", "gather", "scatter", "a2a", "bcast"})
    want[name] = v;
  Session session(cuda());
  CompiledModel model = session.compile(parse_graph(ir, "one.rlx"));
  run_and_check(model, tensor_of(dt, {4, 2}, v), want, std::string(dtype_name(dt)));
}

// The channel itself (the contract's Channel, as the CLI and host code use it) on device buffers
// of the cuda target: an in-place AllReduce, a Broadcast and an AllGather of one rank.
TEST(CudaCollectivesChannel, OneRankOnDeviceBuffers) {
  if (std::string why = missing(); !why.empty()) GTEST_SKIP() << why;
  test::TempDir dir;
  std::shared_ptr<Target> target = cuda();
  std::unique_ptr<Channel> channel =
      target->open_channel({0, 1, fmt::format("file://{}/rdv?timeout=30", dir.path().string())});
  std::shared_ptr<Device> device = target->device();
  ASSERT_TRUE(device);
  const std::vector<float> v = {1, -2, 3.5f, 4};
  const size_t bytes = v.size() * sizeof(float);
  DeviceBuffer a = device->allocate(bytes), b = device->allocate(bytes);
  device->upload(a, 0, v.data(), bytes);
  channel->all_reduce(a, a, DType::kF32, 4, ReduceOp::kSum);
  channel->broadcast(a, DType::kF32, 4, 0);
  channel->all_gather(a, b, DType::kF32, 4);
  std::vector<float> got(v.size(), 0);
  device->download(b, 0, got.data(), bytes);
  device->synchronize(device->record(0));
  EXPECT_EQ(got, v);
  device->release(a);
  device->release(b);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaCollectivesOneRank,
                         ::testing::Values(DType::kF32, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// -- two ranks, two GPUs ---------------------------------------------------------------------

double input(int r, int64_t i) {
  return static_cast<double>((r * 7 + i * 3) % 11 + 1);
}

// Rank 0 sends first and rank 1 receives first: NCCL's Send completes only when the peer's Recv
// runs, so a ring of Send-then-Recv on both ranks would wait on itself (docs/parallel.md).
std::string two_rank_graph(int r) {
  const std::string x = "f32[4,2]";
  std::string g = fmt::format("graph @two(%x: {}) {{\n", x);
  g += fmt::format("  %sum = AllReduce(%x) {{reduce = \"sum\"}} : {}\n", x);
  g += fmt::format("  %max = AllReduce(%x) {{reduce = \"max\"}} : {}\n", x);
  g += fmt::format("  %mean = AllReduce(%x) {{reduce = \"mean\"}} : {}\n", x);
  g += "  %gather = AllGather(%x) {world = 2} : f32[8,2]\n";
  g += "  %scatter = ReduceScatter(%x) {world = 2} : f32[2,2]\n";
  g += fmt::format("  %a2a = AllToAll(%x) {{world = 2}} : {}\n", x);
  g += fmt::format("  %bcast = Broadcast(%x) {{root = 1}} : {}\n", x);
  if (r == 0) {
    g += fmt::format("  %sent = Send(%x) {{peer = 1}} : {}\n", x);
    g += fmt::format("  %got = Recv(%sent) {{peer = 1}} : {}\n", x);
  } else {  // what arrives from rank 0 goes back to it
    g += fmt::format("  %got = Recv(%x) {{peer = 0}} : {}\n", x);
    g += fmt::format("  %sent = Send(%got) {{peer = 0}} : {}\n", x);
  }
  g += "  return %sum, %max, %mean, %gather, %scatter, %a2a, %bcast, %sent, %got\n}\n";
  return g;
}

std::map<std::string, std::vector<double>> two_rank_expected(int r) {
  std::map<std::string, std::vector<double>> e;
  for (int64_t i = 0; i < 8; ++i) {
    const double a = input(0, i), b = input(1, i);
    e["sum"].push_back(a + b);
    e["max"].push_back(std::max(a, b));
    e["mean"].push_back((a + b) / 2);
    e["bcast"].push_back(b);
    e["got"].push_back(a);   // rank 1 receives rank 0's x, rank 0 gets it back
    e["sent"].push_back(a);  // rank 0 sends its x, rank 1 what it received
  }
  for (int q = 0; q < 2; ++q)
    for (int64_t i = 0; i < 8; ++i) e["gather"].push_back(input(q, i));
  for (int64_t j = 0; j < 4; ++j) e["scatter"].push_back(e["sum"][r * 4 + j]);
  for (int q = 0; q < 2; ++q)  // block q of rank r's result is block r of rank q's input
    for (int64_t j = 0; j < 4; ++j) e["a2a"].push_back(input(q, r * 4 + j));
  return e;
}

// One rank of CudaCollectives.TwoRanksOnTwoGpus, started by it in a process of its own.
TEST(CudaCollectivesRank, RunsAsOneRankOfTwo) {
  const char* rank = std::getenv(kRankEnv);
  const char* folder = std::getenv(kFolderEnv);
  if (!rank || !folder)
    GTEST_SKIP() << "runs only as a rank that CudaCollectives.TwoRanksOnTwoGpus starts";
  if (std::string why = missing(); !why.empty()) GTEST_FAIL() << why;
  const int r = std::atoi(rank);
  std::unique_ptr<Channel> channel =
      cuda()->open_channel({r, 2, fmt::format("file://{}/rdv?timeout=60", folder)});
  std::vector<double> v;
  for (int64_t i = 0; i < 8; ++i) v.push_back(input(r, i));
  Session session(cuda());
  CompiledModel model = session.compile(parse_graph(two_rank_graph(r), "two.rlx"));
  run_and_check(model, tensor_of(DType::kF32, {4, 2}, v), two_rank_expected(r),
                fmt::format("rank {} of 2", r));
  if (!::testing::Test::HasFailure())
    std::ofstream(std::filesystem::path(folder) / fmt::format("rank{}.passed", r)) << "ok";
}

TEST(CudaCollectives, TwoRanksOnTwoGpus) {
  if (std::getenv(kRankEnv)) GTEST_SKIP() << "this process is a rank";
  if (std::string why = missing(); !why.empty()) GTEST_SKIP() << why;
  if (int n = device_count(); n < 2)
    GTEST_SKIP() << "two ranks need two GPUs, and this machine has " << n;
  test::TempDir dir;
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string item = *e;
      // Each rank picks its GPU from RLX_LOCAL_RANK; a fixed RLX_CUDA_DEVICE would put both on
      // one.
      if (item.rfind("RLX_CUDA_DEVICE=", 0) && item.rfind("RLX_LOCAL_RANK=", 0))
        env.push_back(item);
    }
    env.push_back(fmt::format("RLX_LOCAL_RANK={}", r));
    env.push_back(fmt::format("{}={}", kRankEnv, r));
    env.push_back(fmt::format("{}={}", kFolderEnv, dir.path().string()));
    std::vector<std::string> args = {"/proc/self/exe",
                                     "--gtest_filter=CudaCollectivesRank.RunsAsOneRankOfTwo"};
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string log = (dir.path() / fmt::format("rank{}.log", r)).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0) << "cannot start rank " << r << ": " << std::strerror(rc);
    pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    while (::waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pids[r], SIGKILL);
        ::waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const std::string log = test::read_file(dir.path() / fmt::format("rank{}.log", r));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << ":\n" << log;
    EXPECT_TRUE(std::filesystem::exists(dir.path() / fmt::format("rank{}.passed", r)))
        << "rank " << r << " did not finish its checks:\n"
        << log;
  }
}

}  // namespace
}  // namespace rlx
