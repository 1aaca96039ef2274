#include "ranks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "errors.h"
#include "job_launcher.h"
#include "model.h"
#include "options.h"
#include "rlx/core/error.h"
#include "rlx/core/host_collectives.h"
#include "stderr_status.h"

extern char** environ;

namespace rlx::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kRankEnv = "RLX_RANK";
constexpr const char* kWorldEnv = "RLX_WORLD_SIZE";
constexpr const char* kRendezvousEnv = "RLX_RENDEZVOUS";
constexpr const char* kLocalRankEnv = "RLX_LOCAL_RANK";

double timeout_of(const RankOptions& o) {
  return o.collective_timeout.value_or(60.0);
}

// This process's command line as the kernel recorded it.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    start = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

std::string describe(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t spawn_rank(const std::string& exe, std::vector<std::string> args, int rank, int world,
                 const std::string& rendezvous) {
  // Ranks other than 0 print nothing on stdout and no progress; their errors still reach stderr.
  if (rank > 0) {
    auto sep = std::find(args.begin() + 1, args.end(), std::string("--"));
    // A flag given twice is a usage error: the rank would stop before its rendezvous.
    if (std::find(args.begin() + 1, sep, std::string("-q")) == sep &&
        std::find(args.begin() + 1, sep, std::string("--quiet")) == sep)
      args.insert(sep, "--quiet");
  }
  // Each rank sets its own RLX_LOCAL_RANK from RLX_RANK (export_local_rank): one inherited from
  // this process would put every rank on the same device.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string item = *e;
    if (item.rfind("RLX_RANK=", 0) && item.rfind("RLX_WORLD_SIZE=", 0) &&
        item.rfind("RLX_RENDEZVOUS=", 0) && item.rfind(std::string(kLocalRankEnv) + "=", 0))
      env.push_back(item);
  }
  env.push_back(fmt::format("{}={}", kRankEnv, rank));
  env.push_back(fmt::format("{}={}", kWorldEnv, world));
  env.push_back(fmt::format("{}={}", kRendezvousEnv, rendezvous));
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (rank > 0) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw CliError(
        fmt::format("--nproc: cannot start rank {} ({}): {}", rank, exe, std::strerror(rc)));
  return pid;
}

void end_ranks(const std::vector<pid_t>& pids, const std::vector<bool>& done, int signal) {
  for (size_t r = 0; r < pids.size(); ++r)
    if (!done[r]) ::kill(pids[r], signal);
}

struct RanksEnd {
  int first_failed = -1;  // -1: every rank exited with 0
  int first_status = 0;
  std::vector<int> ended;  // the ranks still running after the failure, ended by the launcher
};

// Waits for every rank. Once one fails, the others cannot finish the job: a rank that has not
// reached the rendezvous leaves the rest waiting there for the whole collective timeout, so they
// are ended after a short grace. The grace lets ranks that fail on their own (a closed connection
// ends them at their next collective at once) print their own errors first. A rank that exits
// with 0 ends nothing: ranks finish at slightly different times.
RanksEnd wait_for_ranks(const std::vector<pid_t>& pids) {
  constexpr auto kGrace = std::chrono::milliseconds(500);
  constexpr auto kTermToKill = std::chrono::seconds(1);  // for a rank that ignores SIGTERM
  const size_t world = pids.size();
  std::vector<bool> done(world, false);
  size_t remaining = world;
  RanksEnd end;
  Clock::time_point term_at = Clock::time_point::max(), kill_at = Clock::time_point::max();
  while (remaining > 0) {
    for (size_t r = 0; r < world; ++r) {
      int status = 0;
      if (done[r] || ::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --remaining;
      if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || end.first_failed >= 0) continue;
      end.first_failed = static_cast<int>(r), end.first_status = status;
      term_at = Clock::now() + kGrace;
    }
    if (remaining > 0 && Clock::now() > term_at) {
      for (size_t r = 0; r < world; ++r)
        if (!done[r]) end.ended.push_back(static_cast<int>(r));
      end_ranks(pids, done, SIGTERM);
      term_at = Clock::time_point::max();
      kill_at = Clock::now() + kTermToKill;
    }
    if (remaining > 0 && Clock::now() > kill_at) {
      end_ranks(pids, done, SIGKILL);
      kill_at = Clock::time_point::max();
    }
    if (remaining > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return end;
}

}  // namespace

void add_rank_options(CLI::App& app, RankOptions& o, bool tensor_parallel) {
  add_integer(app, "--nproc", "N", 1, o.nproc,
              "run N ranks of this command on this machine (collectives through the target's "
              "engine: Gloo on cpu); rank 0 prints the results");
  add_number(
      app, "--collective-timeout", "SECONDS", [](double v) { return v > 0; }, "> 0",
      o.collective_timeout,
      "a collective (or the ranks' rendezvous) that waits longer fails, naming the rank and the "
      "collective (default 60)");
  add_value(app, "--transport", "tcp|ibverbs", o.transport,
            "how ranks exchange data: tcp (default) or ibverbs (RDMA; needs an RDMA device)");
  if (!tensor_parallel) return;
  add_integer(app, "--tp", "N", 1, o.tp,
              "tensor parallelism: split the model's attention heads and MLP over N ranks, each "
              "holding its share of the weights (--nproc defaults to N; run and bench also take "
              "a multiple of --tp x --pp ranks: copies of the split model sharing the batch; "
              "Hugging Face decoder and bert folders)");
  add_integer(app, "--pp", "P", 1, o.pp,
              "pipeline parallelism: split the model's layers into P consecutive stages, one per "
              "rank (times --tp), each holding its layers' weights (Hugging Face decoder and bert "
              "folders)");
  add_flag(app, "--allow-host-collectives", o.allow_host_collectives,
           "on a target without a collective engine (vulkan, opengl, webgpu, gpu, ...), run each "
           "collective through the host: copy to the host, the cpu target's Gloo, copy back "
           "(reported by rlx explain as the rewrite host-staged-collective)");
}

JobRank job_rank() {
  const std::optional<LaunchedRank> l = launched_rank();
  if (!l) return {};
  return {static_cast<int32_t>(l->rank), static_cast<int32_t>(l->world)};
}

ModelSplit model_split_of(const RankOptions& o, bool copies) {
  if (!o.tp && !o.pp) return {};
  const int64_t tp = o.tp.value_or(1), pp = o.pp.value_or(1);
  int64_t ranks = 0;
  if (__builtin_mul_overflow(tp, pp, &ranks) || ranks > (int64_t{1} << 20))
    throw UsageError(fmt::format("--tp {} --pp {} asks for more ranks than rlx starts", tp, pp));
  const std::string asked = o.tp && o.pp ? fmt::format("--tp {} --pp {}", tp, pp)
                            : o.tp     ? fmt::format("--tp {}", tp)
                                       : fmt::format("--pp {}", pp);
  const JobRank job = job_rank();
  if (job.world == 1) {
    if (ranks == 1) return {};
    throw UsageError(fmt::format("{} splits the model over {} ranks, and this is no job of "
                                 "several ranks",
                                 asked, ranks),
                     "give --nproc, or run under mpirun -n or srun -n");
  }
  if (copies ? job.world % ranks != 0 : job.world != ranks)
    throw UsageError(fmt::format("{} needs {} ranks{} and the job has {}", asked, ranks,
                                 copies ? fmt::format(" (or a multiple: copies of the split model, "
                                                      "each taking a share of the batch)")
                                        : "",
                                 job.world),
                     fmt::format("give --nproc {0} (or mpirun -n {0}, srun -n {0}){1}", ranks,
                                 o.pp ? std::string() : fmt::format(", or --tp {}", job.world)));
  // Copy-major, then stage-major within a copy: a stage's tensor-parallel shards are
  // consecutive ranks (rlx/core/model.h; replicas.h for the copies).
  const int64_t local = job.rank % ranks;
  ModelSplit split;
  if (tp > 1) split.tp = {static_cast<int32_t>(local % tp), static_cast<int32_t>(tp)};
  if (pp > 1) split.pp = {static_cast<int32_t>(local / tp), static_cast<int32_t>(pp)};
  return split;
}

Model load_model_shard(const registry::Registry& reg, const fs::path& path, const RankOptions& o,
                       ImportOptions options, bool copies) {
  const ModelSplit split = model_split_of(o, copies);
  options.tensor_parallel = split.tp;
  options.pipeline_parallel = split.pp;
  std::string read_by;
  Model m = load_model(reg, path, options, &read_by);
  const std::string reader =
      read_by.empty() ? std::string("IR text reader") : "importer " + read_by;
  if (split.tp.size > 1 && !m.metadata.count(kTensorParallelKey))
    throw CliError(fmt::format("--tp {}: {} cannot be split over ranks: the {} cannot shard "
                               "models",
                               split.tp.size, path.string(), reader),
                   "run it without --tp (--nproc N runs whole copies), or use a Hugging Face "
                   "decoder or bert folder");
  if (split.pp.stages > 1 && !m.metadata.count(kPipelineParallelKey))
    throw CliError(fmt::format("--pp {}: {} cannot be split over ranks: the {} cannot split "
                               "models into pipeline stages",
                               split.pp.stages, path.string(), reader),
                   "run it without --pp (--nproc N runs whole copies), or use a Hugging Face "
                   "decoder folder");
  return m;
}

std::optional<int> launch_ranks(const RankOptions& given) {
  const std::optional<LaunchedRank> launched = launched_rank();
  // A launcher's job of one rank is no job of several: --nproc (or its default) may start them.
  const bool job = launched && (launched->launcher == Launcher::kNproc || launched->world > 1);
  RankOptions o = given;
  if ((o.tp || o.pp) && !o.nproc && !job) {
    int64_t ranks = 0;
    if (!__builtin_mul_overflow(o.tp.value_or(1), o.pp.value_or(1), &ranks)) o.nproc = ranks;
  }
  if (job && o.nproc && launched->launcher != Launcher::kNproc) {
    const char* name = launcher_name(launched->launcher);
    throw UsageError(fmt::format("--nproc starts ranks itself; under {}, {}'s -n gives the ranks",
                                 name, name),
                     fmt::format("drop --nproc, or run rlx without {}", name));
  }
  if (job) {
    // Before the command opens its target: a device target picks its device from it.
    export_local_rank(*launched);
    // Fails here, before any model is read, when the ranks cannot meet.
    if (launched->launcher != Launcher::kNproc)
      job_rendezvous(*launched, timeout_of(o), o.transport);
  }
  if (!o.nproc || job) return std::nullopt;
  const int world = static_cast<int>(*o.nproc);
  std::error_code ec;
  const std::string exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec || fs::path(exe).filename() != "rlx")
    throw CliError("--nproc starts copies of the rlx command, and this process is " + exe,
                   "run the rlx binary with --nproc");
  std::string tmpl = (fs::temp_directory_path() / "rlx-ranks-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw CliError(fmt::format("--nproc: cannot create a rendezvous folder under {}: {}",
                               fs::temp_directory_path().string(), std::strerror(errno)));
  const fs::path dir = tmpl;
  const std::string rendezvous =
      fmt::format("file://{}?timeout={}&transport={}", dir.string(), timeout_of(o), o.transport);
  const std::vector<std::string> args = own_arguments();
  std::vector<pid_t> pids;
  try {
    for (int r = 0; r < world; ++r) pids.push_back(spawn_rank(exe, args, r, world, rendezvous));
  } catch (...) {
    // The ranks already started would wait at the rendezvous for the one that never came.
    end_ranks(pids, std::vector<bool>(pids.size(), false), SIGKILL);
    for (pid_t pid : pids) ::waitpid(pid, nullptr, 0);
    fs::remove_all(dir, ec);
    throw;
  }
  const RanksEnd end = wait_for_ranks(pids);
  fs::remove_all(dir, ec);
  if (end.first_failed < 0) return 0;
  std::string others = "the other ranks stopped at their next collective";
  if (!end.ended.empty()) {
    std::vector<std::string> names;
    for (int r : end.ended) names.push_back(std::to_string(r));
    others = fmt::format(
        "the launcher ended rank{} {}, which {} still running (waiting for it at "
        "the rendezvous or a collective)",
        names.size() > 1 ? "s" : "", fmt::join(names, ", "), names.size() > 1 ? "were" : "was");
  }
  std::fputs(fmt::format("rlx: rank {} of {} {}; {}\n", end.first_failed, world,
                         describe(end.first_status), others)
                 .c_str(),
             stderr);
  return exit_code_of(end.first_status);
}

// OpenMPI binds each rank to one core by default when there are no more ranks than cores; Gloo's
// transport thread then shares that core with the rank's work, and a small collective takes
// ~4 ms instead of well under one (docs/parallel.md, "Bandwidth").
namespace {
void warn_if_bound_to_one_core(Launcher launcher) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) != 1) return;
  if (std::thread::hardware_concurrency() < 2) return;
  const bool srun = launcher == Launcher::kSrun;
  note(fmt::format("this rank may run on one core only (its CPU affinity, as {} by default): "
                   "the collectives' transport thread shares it and each small collective then "
                   "waits ~4 ms; run {} (docs/parallel.md)",
                   srun ? "srun may bind it" : "mpirun binds",
                   srun ? "srun with --cpu-bind=none or --cpus-per-task=2 or more"
                        : "mpirun with --bind-to none"));
}

// The channel of a target allowed to stage collectives: its own where it has a collective engine,
// else one opened on the cpu target (kept in `host` while the channel lives) and handed to it.
std::unique_ptr<Channel> open_staging_channel(Target& target, const HostCollectivesV1& staging,
                                              const registry::Registry& registry,
                                              const ChannelOptions& c,
                                              std::shared_ptr<Target>* host) {
  try {
    return target.open_channel(c);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported) throw;
  }
  *host = registry.target("cpu");
  std::unique_ptr<Channel> channel = (*host)->open_channel(c);
  staging.use_channel(staging.context, channel.get());
  return channel;
}

// The target's own channel. A target that could stage collectives through the host but was not
// allowed to says how to allow it: its ranks cannot exchange tensors otherwise.
std::unique_ptr<Channel> open_target_channel(Target& target, const ChannelOptions& c) {
  try {
    return target.open_channel(c);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported || !host_collectives(target)) throw;
    throw CliError(fmt::format("{} has no collective engine, so the ranks of this job cannot "
                               "exchange tensors on it ({})",
                               target.name(), e.what()),
                   fmt::format("pass --allow-host-collectives to stage each collective through "
                               "the host (`rlx explain MODEL --target {} --allow-host-collectives` "
                               "lists them), or run the ranks on --target cpu",
                               target.name()));
  }
}

}  // namespace

std::shared_ptr<Channel> join_ranks(Target& target, const RankOptions& o,
                                    const registry::Registry* registry) {
  const HostCollectivesV1* staging = o.allow_host_collectives ? host_collectives(target) : nullptr;
  if (staging) staging->allow(staging->context);
  ChannelOptions c;
  const std::optional<LaunchedRank> l = launched_rank();
  std::optional<fs::path> made;  // a folder this job's rank 0 removes at the end
  if (l && l->launcher == Launcher::kNproc) {
    const char* r = std::getenv(kRendezvousEnv);
    if (!r) throw CliError(std::string(kRankEnv) + " is set but " + kRendezvousEnv + " is not");
    c.rendezvous = r;
  } else if (l) {
    // mpirun, srun: one folder per job (and step), shared by its ranks.
    const JobRendezvous r = job_rendezvous(*l, timeout_of(o), o.transport);
    c.rendezvous = r.url;
    if (r.made) made = *r.made;
    if (l->rank > 0 && !std::freopen("/dev/null", "w", stdout))
      throw CliError("cannot silence the standard output of rank " + std::to_string(l->rank));
    if (l->rank == 0) warn_if_bound_to_one_core(l->launcher);
  } else {
    if (o.transport != "tcp")
      throw UsageError(
          "--transport chooses how ranks exchange data: give --nproc N or run under mpirun or "
          "srun");
    return nullptr;
  }
  c.rank = static_cast<int32_t>(l->rank);
  c.world_size = static_cast<int32_t>(l->world);
  std::shared_ptr<Target> host;  // the cpu target, while its channel stages collectives
  std::unique_ptr<Channel> channel =
      staging && registry ? open_staging_channel(target, *staging, *registry, c, &host)
                          : open_target_channel(target, c);
  // The channel's last barrier has run when it is deleted: no rank reads the folder any more.
  return std::shared_ptr<Channel>(channel.release(), [made, host, staging](Channel* ch) {
    if (host) staging->use_channel(staging->context, nullptr);
    delete ch;
    std::error_code ec;
    if (made) fs::remove_all(*made, ec);
  });
}

}  // namespace rlx::cli
