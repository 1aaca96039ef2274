// Ranks that Slurm's srun starts: each process reads its rank from SLURM_PROCID and the job's
// size from SLURM_NTASKS, and the ranks meet in a folder named by SLURM_JOB_ID and SLURM_STEP_ID
// (docs/parallel.md). There is no Slurm here: the test starts the two processes itself with the
// environment srun gives its tasks, and compares their results with one process's.
#include <functional>
#include <future>

#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const fs::path kFixtures = RLX_FIXTURES_DIR;

class SlurmCli : public CliTest {
 protected:
  // What srun sets for task `rank` of a step of `world` tasks on `nodes` machines.
  test::Environment srun_task(int rank, int world, int nodes) {
    return {{"SLURM_PROCID", std::to_string(rank)},
            {"SLURM_LOCALID", std::to_string(rank)},
            {"SLURM_NTASKS", std::to_string(world)},
            {"SLURM_NNODES", std::to_string(nodes)},
            {"SLURM_JOB_ID", std::to_string(4000 + getpid() % 1000)},
            {"SLURM_STEP_ID", "0"},
            // The default rendezvous folder is made in the temp dir: this test's own.
            {"TMPDIR", dir_.string()}};
  }

  // Runs `args` as ranks 0..world-1 at once, each with `env(rank)` and `per_rank(rank)` added to
  // its arguments.
  std::vector<ProcessResult> run_ranks(
      int world, const std::vector<std::string>& args,
      const std::function<test::Environment(int)>& env,
      const std::function<std::vector<std::string>(int)>& per_rank) {
    std::vector<std::future<ProcessResult>> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> a = args;
      const std::vector<std::string> more = per_rank(r);
      a.insert(a.end(), more.begin(), more.end());
      ranks.push_back(std::async(std::launch::async, [this, a, e = env(r)] { return rlx(a, e); }));
    }
    std::vector<ProcessResult> results;
    for (auto& f : ranks) results.push_back(f.get());
    return results;
  }

  std::vector<std::string> qwen3_args() const {
    return {"run",
            (kFixtures / "qwen3-tiny").string(),
            "--input",
            "input_ids=5,9,2,7,1,3,8,4,6,11,12,10",
            "--input-shape",
            "input_ids=4x3",
            "--collective-timeout",
            "60"};
  }

  std::vector<float> logits(const fs::path& file) {
    const Tensor t = read_safetensors(file).at("logits");
    return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
  }

  // Rank r's -o file.
  std::vector<std::string> output_of(int r) {
    return {"-o", (dir_ / fmt::format("rank{}.safetensors", r)).string()};
  }
};

// Two srun tasks on one machine, each holding half of qwen3-tiny's heads (--tp 2), give one
// process's logits (to float rounding: the AllReduce adds the halves' partial sums), on both
// ranks; rank 1 prints nothing; rank 0 removes the job's rendezvous folder at the end.
TEST_F(SlurmCli, SrunTasksSplitTheModelAndGiveOneProcessLogits) {
  std::vector<std::string> one_args = qwen3_args();
  one_args.insert(one_args.end(), {"-o", (dir_ / "one.safetensors").string()});
  ProcessResult one = rlx(one_args);
  ASSERT_EQ(one.exit_code, 0) << dump(one);
  const std::vector<float> want = logits(dir_ / "one.safetensors");

  std::vector<std::string> args = qwen3_args();
  args.insert(args.end(), {"--tp", "2"});
  const std::vector<ProcessResult> ranks = run_ranks(
      2, args, [&](int r) { return srun_task(r, 2, 1); }, [&](int r) { return output_of(r); });
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ranks[r].exit_code, 0) << "rank " << r << "\n" << dump(ranks[r]);
    const std::vector<float> got = logits(dir_ / fmt::format("rank{}.safetensors", r));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << r << " " << i;
  }
  // Were each process to start ranks of its own (--tp's default --nproc), both would print.
  EXPECT_THAT(ranks[0].out, HasSubstr("wrote ")) << dump(ranks[0]);
  EXPECT_EQ(ranks[1].out, "") << dump(ranks[1]);
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec))
    EXPECT_EQ(e.path().filename().string().rfind("rlx-slurm-", 0), std::string::npos)
        << e.path() << " was left behind";
}

// On several machines the temp dir is no meeting place: without RLX_RENDEZVOUS each rank stops
// at once, before reading the model, saying what to set (srun's SLURM_NNODES, and mpirun's ranks
// when fewer of them run on this machine than in the job).
TEST_F(SlurmCli, RanksOnSeveralMachinesNeedASharedRendezvousFolder) {
  std::vector<std::string> args = qwen3_args();
  args.insert(args.end(), {"--tp", "2"});
  test::Environment mpirun = {{"OMPI_COMM_WORLD_RANK", "1"},
                              {"OMPI_COMM_WORLD_SIZE", "2"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                              {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}};
  for (const auto& [launcher, env] :
       {std::pair{"srun", srun_task(1, 2, 2)}, std::pair{"mpirun", mpirun}}) {
    ProcessResult r = rlx(args, env);
    EXPECT_EQ(r.exit_code, 1) << launcher << "\n" << dump(r);
    EXPECT_THAT(r.err, HasSubstr(fmt::format("the 2 ranks of this {} job run on several machines",
                                             launcher)))
        << dump(r);
    EXPECT_THAT(r.err, HasSubstr("set RLX_RENDEZVOUS=file:///shared/folder")) << dump(r);
  }
}

// With RLX_RENDEZVOUS naming a folder (here one only this machine sees, standing in for a shared
// one), srun tasks spread over two machines meet there and run the split model; each listens on
// its machine's name rather than 127.0.0.1.
TEST_F(SlurmCli, ASharedRendezvousFolderJoinsRanksOnSeveralMachines) {
  const fs::path shared = dir_ / "shared";
  fs::create_directories(shared);
  std::vector<std::string> args = qwen3_args();
  args.insert(args.end(), {"--tp", "2"});
  const std::vector<ProcessResult> ranks = run_ranks(
      2, args,
      [&](int r) {
        test::Environment e = srun_task(r, 2, 2);
        e["SLURM_LOCALID"] = "0";  // one task on each machine
        e["RLX_RENDEZVOUS"] = "file://" + shared.string();
        return e;
      },
      [&](int r) { return output_of(r); });
  for (int r = 0; r < 2; ++r) ASSERT_EQ(ranks[r].exit_code, 0) << r << "\n" << dump(ranks[r]);
  EXPECT_EQ(ranks[1].out, "") << dump(ranks[1]);
  EXPECT_EQ(logits(dir_ / "rank0.safetensors"), logits(dir_ / "rank1.safetensors"));
}

// srun's -n gives the ranks: --nproc inside a step of several tasks is refused. An sbatch script
// or salloc shell (SLURM_JOB_ID, SLURM_PROCID=0 and SLURM_NTASKS, but no SLURM_STEP_ID) is no
// step: there --nproc starts its own ranks.
TEST_F(SlurmCli, NprocIsRefusedInsideAStepAndStartsRanksInABatchScript) {
  const fs::path g = write("sum.rlx",
                           "graph @g(%x: f32[2]) {\n"
                           "  %s = AllReduce(%x) {reduce = \"sum\"} : f32[2]\n"
                           "  return %s\n}\n");
  const std::vector<std::string> args = {"run",     g.string(), "--input", "x=1,2",
                                         "--nproc", "2",        "--json",  "--collective-timeout",
                                         "20"};
  ProcessResult step = rlx(args, srun_task(0, 2, 1));
  EXPECT_EQ(step.exit_code, 1) << dump(step);
  EXPECT_THAT(step.err, HasSubstr("--nproc starts ranks itself; under srun, srun's -n gives the "
                                  "ranks"))
      << dump(step);

  test::Environment batch = srun_task(0, 4, 2);
  batch["SLURM_STEP_ID"] = std::nullopt;
  ProcessResult script = rlx(args, batch);
  ASSERT_EQ(script.exit_code, 0) << dump(script);
  const json::Value doc = parse_json(script);
  std::vector<double> v;
  for (const json::Value& x : *doc.find("outputs")->as_array()->at(0).find("values")->as_array())
    v.push_back(x.as_number()->value);
  EXPECT_EQ(v, (std::vector<double>{2, 4})) << dump(script);
}

}  // namespace
}  // namespace rlx::cli
