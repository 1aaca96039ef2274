#include "job_launcher.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "errors.h"

namespace rlx::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kRendezvousEnv = "RLX_RENDEZVOUS";
constexpr const char* kLocalRankEnv = "RLX_LOCAL_RANK";

std::optional<int64_t> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (*end) throw CliError(fmt::format("{}={} is not an integer", name, v));
  return x;
}

std::string env_or(const char* name, const char* otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? v : otherwise;
}

std::optional<LaunchedRank> from_nproc() {
  const std::optional<int64_t> rank = env_int("RLX_RANK"), world = env_int("RLX_WORLD_SIZE");
  if (!rank || !world) return std::nullopt;
  // --nproc starts every rank on its own machine.
  return LaunchedRank{Launcher::kNproc, *rank, *world, *rank, false, {}};
}

std::optional<LaunchedRank> from_mpirun() {
  const std::optional<int64_t> rank = env_int("OMPI_COMM_WORLD_RANK"),
                               world = env_int("OMPI_COMM_WORLD_SIZE");
  if (!rank || !world) return std::nullopt;
  LaunchedRank l{Launcher::kMpirun,
                 *rank,
                 *world,
                 env_int("OMPI_COMM_WORLD_LOCAL_RANK"),
                 false,
                 "mpi-" + env_or("OMPI_MCA_ess_base_jobid", "job")};
  // Fewer ranks on this machine than in the job: the others run elsewhere.
  if (const std::optional<int64_t> local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE"))
    l.spans_machines = *local_size < *world;
  return l;
}

// srun sets SLURM_STEP_ID for the tasks of a job step; an sbatch script or an salloc shell has
// SLURM_JOB_ID (and often SLURM_PROCID=0 and SLURM_NTASKS) without being one of the step's
// ranks, and must stay a plain process there (where `--nproc` may start ranks).
std::optional<LaunchedRank> from_srun() {
  const std::optional<int64_t> rank = env_int("SLURM_PROCID"), world = env_int("SLURM_NTASKS");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (!rank || !world || !step || !*step) return std::nullopt;
  LaunchedRank l{Launcher::kSrun, *rank,
                 *world,          env_int("SLURM_LOCALID"),
                 false,           fmt::format("slurm-{}.{}", env_or("SLURM_JOB_ID", "job"), step)};
  // The step's nodes when srun says so (a step may use part of the allocation), else the job's.
  std::optional<int64_t> nodes = env_int("SLURM_STEP_NUM_NODES");
  if (!nodes) nodes = env_int("SLURM_NNODES");
  l.spans_machines = nodes && *nodes > 1;
  return l;
}

// "file:///FOLDER?key=value&..." (or a bare folder) with `key=value` added unless it names `key`.
std::string with_default(std::string url, const std::string& key, const std::string& value) {
  const size_t query = url.find('?');
  if (query != std::string::npos) {
    const std::string q = "&" + url.substr(query + 1);
    if (q.find("&" + key + "=") != std::string::npos) return url;
    return url + "&" + key + "=" + value;
  }
  return url + "?" + key + "=" + value;
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNproc:
      return "rlx --nproc";
    case Launcher::kMpirun:
      return "mpirun";
    case Launcher::kSrun:
      return "srun";
  }
  return "?";
}

std::optional<LaunchedRank> launched_rank() {
  std::optional<LaunchedRank> l = from_nproc();
  if (!l) l = from_mpirun();
  if (!l) l = from_srun();
  if (!l) return std::nullopt;
  if (l->world < 1 || l->rank < 0 || l->rank >= l->world)
    throw CliError(fmt::format("{} started this process as rank {} of a job of {}, which is no "
                               "rank of it",
                               launcher_name(l->launcher), l->rank, l->world),
                   "check the launcher's variables in the environment (docs/parallel.md)");
  if (!l->local_rank && !l->spans_machines) l->local_rank = l->rank;
  return l;
}

JobRendezvous job_rendezvous(const LaunchedRank& l, double timeout_s,
                             const std::string& transport) {
  JobRendezvous r;
  std::string url;
  if (const char* shared = std::getenv(kRendezvousEnv); shared && *shared) {
    url = shared;
    if (url.rfind("file://", 0) != 0) url = "file://" + url;
  } else if (l.spans_machines) {
    throw CliError(
        fmt::format("the {} ranks of this {} job run on several machines, and the rendezvous "
                    "folder rlx makes by default is in this machine's temporary directory, which "
                    "the other machines do not see",
                    l.world, launcher_name(l.launcher)),
        fmt::format("set {}=file:///shared/folder to a folder on a file system every machine "
                    "shares, for every rank (docs/parallel.md)",
                    kRendezvousEnv));
  } else {
    const fs::path folder = fs::temp_directory_path() / ("rlx-" + l.job_key);
    if (l.rank == 0) r.made = folder.string();
    url = "file://" + folder.string();
  }
  url = with_default(url, "timeout", fmt::format("{}", timeout_s));
  url = with_default(url, "transport", transport);
  // Ranks listen on 127.0.0.1 by default, which no other machine reaches; this machine's name is
  // what Gloo itself would listen on. host= in RLX_RENDEZVOUS chooses another address.
  if (l.spans_machines) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && *name) url = with_default(url, "host", name);
  }
  r.url = url;
  return r;
}

void export_local_rank(const LaunchedRank& l) {
  if (!l.local_rank || std::getenv(kLocalRankEnv)) return;
  ::setenv(kLocalRankEnv, std::to_string(*l.local_rank).c_str(), 0);
}

}  // namespace rlx::cli
