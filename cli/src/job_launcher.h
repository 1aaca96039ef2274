// Which launcher started this process as a rank, read from the environment it set (ranks.h,
// docs/parallel.md): rlx's own `--nproc` (RLX_RANK, RLX_WORLD_SIZE, RLX_RENDEZVOUS), OpenMPI's
// mpirun (OMPI_COMM_WORLD_*) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS, ...). The first found in
// that order wins: --nproc's ranks inherit their parent's launcher variables, and processes that
// mpirun starts inside a Slurm allocation inherit Slurm's.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace rlx::cli {

enum class Launcher { kNproc, kMpirun, kSrun };

struct LaunchedRank {
  Launcher launcher = Launcher::kNproc;
  int64_t rank = 0, world = 1;
  // The rank's index among the job's ranks on this machine (the cuda target picks its GPU from
  // it); nullopt when the launcher did not say and the ranks span machines.
  std::optional<int64_t> local_rank;
  bool spans_machines = false;  // ranks on several machines: a rendezvous folder must be shared
  // Names this job's rendezvous folder in the temp dir (mpirun, srun): unique per job and step.
  std::string job_key;
};

// nullopt when no launcher started this process (a plain `rlx` command). A user error when a
// launcher variable is not an integer or the rank is outside the job.
std::optional<LaunchedRank> launched_rank();

// "rlx --nproc", "mpirun", "srun": for messages.
const char* launcher_name(Launcher launcher);

// The rendezvous URL of a rank started by mpirun or srun: RLX_RENDEZVOUS when set (its query,
// if any, kept; timeout and transport added where it names none), else a folder in this
// machine's temp dir named by the job (`made` then holds it: rank 0 removes it at the end). A
// user error, saying to set RLX_RENDEZVOUS, when the ranks span machines and it is not set: the
// other machines cannot see this one's temp dir.
struct JobRendezvous {
  std::string url;
  std::optional<std::string> made;
};
JobRendezvous job_rendezvous(const LaunchedRank& launched, double timeout_s,
                             const std::string& transport);

// Sets RLX_LOCAL_RANK to the rank's local rank unless the environment already gives it (a
// wrapper script's choice is kept), so that device targets of this process can pick their device.
void export_local_rank(const LaunchedRank& launched);

}  // namespace rlx::cli
