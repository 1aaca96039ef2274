// Several ranks of one command (docs/parallel.md): `--nproc N` makes this rlx start N copies of
// its own command line as ranks 0..N-1, joined through a FileStore folder it creates and removes;
// under `mpirun -n N rlx ...` or `srun -n N rlx ...` each process reads its rank and the world
// size from the launcher's environment instead (job_launcher.h). Every rank opens the target's
// channel (its collective engine) before the model runs, so the graph's collectives find their
// communicator. Only rank 0 prints its results; the launcher reports the first rank that failed
// and how.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "rlx/core/device.h"
#include "rlx/core/model.h"
#include "rlx/registry/registry.h"
#include "rlx/core/target.h"

namespace CLI {
class App;
}

namespace rlx::cli {

struct RankOptions {
  std::optional<int64_t> nproc;
  std::optional<int64_t> tp;  // tensor-parallel ranks (--tp); --nproc defaults to tp x pp
  std::optional<int64_t> pp;  // pipeline stages (--pp)
  std::optional<double> collective_timeout;  // seconds; 60 when not given
  std::string transport = "tcp";
  // --allow-host-collectives: a target without a collective engine may stage collectives
  // through the host (rlx/core/host_collectives.h).
  bool allow_host_collectives = false;
};

// --nproc N, --collective-timeout SECONDS, --transport tcp|ibverbs, and --tp N and --pp P unless
// the command has no model to split (`rlx train` splits batches).
void add_rank_options(CLI::App& app, RankOptions& into, bool tensor_parallel = true);

// This process's rank and the job's size: {0, 1} outside a job of several ranks.
struct JobRank {
  int32_t rank = 0, world = 1;
};
JobRank job_rank();

// The shard and stage this rank builds under --tp and --pp (rank and world from the job:
// --nproc's ranks or mpirun's; stage-major, rlx/core/model.h); {0, 1} for what is not asked. A
// usage error when the job's ranks are not --tp x --pp.
struct ModelSplit {
  TensorParallel tp;
  PipelineParallel pp;
};
// With `copies`, a job of a multiple of those ranks holds copies of the split model (replicas.h):
// the shard and stage are this rank's within its copy.
ModelSplit model_split_of(const RankOptions& options, bool copies = false);

// Loads the model as load_model does, as this rank's tensor-parallel shard under --tp and its
// pipeline stage under --pp: a user error when the importer did not build what was asked (it
// cannot split this format).
// `copies`: as for model_split_of (the commands that share a batch between copies: run, bench).
Model load_model_shard(const registry::Registry& reg, const std::filesystem::path& path,
                       const RankOptions& ranks, ImportOptions options = {}, bool copies = false);

// With --nproc N in a process that is not a rank yet: runs the N ranks of this command line,
// waits for them and returns the exit code (0 when every rank succeeded, else the first failed
// rank's). Once a rank fails, the ranks still running are ended half a second later. nullopt
// when this process is to do the work itself; a rank then has RLX_LOCAL_RANK set (unless the
// environment gave it) before the command opens its target, and a rank of mpirun or srun fails
// here when its ranks cannot meet (several machines and no shared RLX_RENDEZVOUS folder).
std::optional<int> launch_ranks(const RankOptions& options);

// In a rank (started by launch_ranks, mpirun or srun), opens `target`'s channel to the other
// ranks; keep the result alive while the model runs. nullptr outside a job of several ranks.
// Under mpirun and srun, rank 0 removes the rendezvous folder it made when the channel is
// released.
//
// With --allow-host-collectives, a target that can stage collectives through the host
// (rlx/core/host_collectives.h) is allowed to, first of all (so that its collectives compile);
// when it opens no channel of its own, the channel is opened on `registry`'s cpu target (Gloo)
// and handed to it for the staged collectives.
std::shared_ptr<Channel> join_ranks(Target& target, const RankOptions& options,
                                    const registry::Registry* registry = nullptr);

}  // namespace rlx::cli
