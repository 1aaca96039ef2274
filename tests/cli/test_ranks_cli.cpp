// `rlx run MODEL --nproc N` and `mpirun -n N rlx run MODEL`: ranks join through the cpu target's
// Gloo channel and the graph's collectives see every rank; rank 0 alone prints.
#include <sched.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>

#include "cli_fixture.h"

namespace rlx::cli {
namespace {

class RanksCli : public CliTest {
 protected:
  fs::path graph() {
    return write("coll.rlx",
                 "graph @coll(%x: f32[3]) {\n"
                 "  %sum = AllReduce(%x) {reduce = \"sum\"} : f32[3]\n"
                 "  %all = AllGather(%x) {world = 3} : f32[9]\n"
                 "  return %sum, %all\n}\n");
  }
};

TEST_F(RanksCli, NprocStartsTheRanksAndRankZeroPrints) {
  ProcessResult r = rlx({"run", graph().string(), "--input", "x=1,2,3", "--nproc", "3",
                         "--collective-timeout", "20", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  // Three ranks with the same input: the sum is three times x, the gather x three times over.
  json::Value doc = json::parse(r.out);
  const json::Array& outs = *doc.find("outputs")->as_array();
  ASSERT_EQ(outs.size(), 2u) << dump(r);
  auto values = [&](size_t i) {
    std::vector<double> v;
    for (const json::Value& x : *outs[i].find("values")->as_array())
      v.push_back(x.as_number()->value);
    return v;
  };
  EXPECT_EQ(values(0), (std::vector<double>{3, 6, 9})) << dump(r);
  EXPECT_EQ(values(1), (std::vector<double>{1, 2, 3, 1, 2, 3, 1, 2, 3})) << dump(r);
}

TEST_F(RanksCli, AGraphForThreeRanksRunOnTwoFailsOnEveryRankNamingTheMismatch) {
  ProcessResult r = rlx({"run", graph().string(), "--input", "x=1,2,3", "--nproc", "2",
                         "--collective-timeout", "20"});
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("built for a communicator of 3 ranks, and this job has 2"))
      << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: rank ")) << dump(r);
}

// The pid of the process that is rank `rank` of a launch whose command line holds `marker` (an
// argument no other process has), or 0 while there is none: found through /proc, as the test
// only sees the launcher.
pid_t find_rank(const std::string& marker, int rank) {
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string args = read(e.path() / "cmdline");
    const std::string env = '\0' + read(e.path() / "environ");
    if (args.find('\0' + marker + '\0') != std::string::npos &&
        env.find('\0' + fmt::format("RLX_RANK={}", rank) + '\0') != std::string::npos)
      return static_cast<pid_t>(std::stoi(name));
  }
  return 0;
}

// A rank that ends before the rendezvous (killed here as soon as it starts: no rank can be made
// to fail alone before it) would leave the others waiting there for the whole collective
// timeout; the launcher ends them at once instead, and names the rank that ended first.
TEST_F(RanksCli, ARankEndingBeforeTheRendezvousEndsTheOthersPromptly) {
  const std::string g = graph().string();
  const auto start = std::chrono::steady_clock::now();
  std::future<ProcessResult> job = std::async(std::launch::async, [&] {
    return rlx({"run", g, "--input", "x=1,2,3", "--nproc", "3", "--collective-timeout", "60"});
  });
  pid_t rank1 = 0;
  while (!rank1 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20) &&
         job.wait_for(std::chrono::milliseconds(1)) == std::future_status::timeout)
    rank1 = find_rank(g, 1);
  if (!rank1) FAIL() << "rank 1 was not found running\n" << dump(job.get());
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  ProcessResult r = job.get();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 15) << dump(r);
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: rank 1 of 3 was killed by signal 9")) << dump(r);
}

TEST_F(RanksCli, WithoutRanksTheCollectiveSaysHowToStartThem) {
  ProcessResult r = rlx({"run", graph().string(), "--input", "x=1,2,3"});
  EXPECT_NE(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("--nproc N")) << dump(r);
}

TEST_F(RanksCli, MpirunRanksReadTheirRankFromOpenMpi) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun here";
  const fs::path g = write("coll2.rlx",
                           "graph @coll(%x: f32[2]) {\n"
                           "  %sum = AllReduce(%x) {reduce = \"max\"} : f32[2]\n"
                           "  return %sum\n}\n");
  // Root may run mpirun in CI containers only when it says so.
  ProcessResult r = test::run_process("/usr/bin/mpirun",
                                      {"--oversubscribe", "-n", "2", RLX_BINARY, "run", g.string(),
                                       "--input", "x=4,5", "--collective-timeout", "20", "--json"},
                                      rlx_environment({{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                                       {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                                                       {"OMPI_MCA_plm_rsh_agent", ""}}));
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  json::Value doc = json::parse(r.out);  // rank 1's stdout is silenced: one document
  const json::Array& outs = *doc.find("outputs")->as_array();
  std::vector<double> v;
  for (const json::Value& x : *outs[0].find("values")->as_array())
    v.push_back(x.as_number()->value);
  EXPECT_EQ(v, (std::vector<double>{4, 5})) << dump(r);
}

// mpirun's default binding puts each rank on one core, where Gloo's transport thread slows every
// small collective: rank 0 says so and how to avoid it, and is silent when the rank is unbound.
// Ranks other than 0 get --quiet from the launcher; a user's own -q is not given twice (which
// CLI11 refuses, so the ranks stopped before their rendezvous).
TEST_F(RanksCli, QuietRanksTakeTheUsersQuietFlagOnce) {
  for (const char* quiet : {"-q", "--quiet"}) {
    ProcessResult r = rlx({"run", graph().string(), "--input", "x=1,2,3", "--nproc", "3", quiet,
                           "--collective-timeout", "20", "--json"});
    EXPECT_EQ(r.exit_code, 0) << quiet << "\n" << dump(r);
  }
}

TEST_F(RanksCli, MpirunBindingToOneCoreIsNoted) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun here";
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (std::thread::hardware_concurrency() < 2 || ::sched_getaffinity(0, sizeof mine, &mine) != 0 ||
      CPU_COUNT(&mine) < 2)
    GTEST_SKIP() << "this test may use one core only: no binding to tell apart";
  const fs::path g = write("coll_bind.rlx",
                           "graph @coll(%x: f32[2]) {\n"
                           "  %sum = AllReduce(%x) {reduce = \"sum\"} : f32[2]\n"
                           "  return %sum\n}\n");
  auto run = [&](const char* binding) {
    return test::run_process("/usr/bin/mpirun",
                             {"--bind-to", binding, "-n", "2", RLX_BINARY, "run", g.string(),
                              "--input", "x=4,5", "--collective-timeout", "20"},
                             rlx_environment({{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                              {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                                              {"OMPI_MCA_plm_rsh_agent", ""}}));
  };
  ProcessResult bound = run("core");
  ASSERT_EQ(bound.exit_code, 0) << dump(bound);
  EXPECT_THAT(bound.err, HasSubstr("run mpirun with --bind-to none")) << dump(bound);
  ProcessResult unbound = run("none");
  ASSERT_EQ(unbound.exit_code, 0) << dump(unbound);
  EXPECT_THAT(unbound.err, ::testing::Not(HasSubstr("one core"))) << dump(unbound);
}

}  // namespace
}  // namespace rlx::cli
