// `rlx run MODEL --nproc N` and `mpirun -n N rlx run MODEL`: ranks join through the cpu target's
// Gloo channel and the graph's collectives see every rank; rank 0 alone prints.
#include <sched.h>

#include <cstdlib>
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
