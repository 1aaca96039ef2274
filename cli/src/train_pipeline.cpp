// `rlx train --pp P [--micro-batches M]`: the pipelined step's options
// (rlx/core/pipeline_training.h) shared by the three model paths, and --resume.
#include <fmt/format.h>

#include <filesystem>

#include "errors.h"
#include "rlx/core/error.h"
#include "rlx/core/passes.h"
#include "train_options.h"

namespace rlx::cli {

std::optional<PipelineTraining> pipeline_training(const TrainOptions& o, const JobRank& job) {
  if (!o.ranks.pp && !o.micro_batches) return std::nullopt;
  PipelineTraining pp;
  if (o.ranks.pp) {
    pp.stages = static_cast<int32_t>(*o.ranks.pp);
    if (job.world % pp.stages)
      throw UsageError(
          fmt::format("--pp {} trains {} stages, each on the same number of ranks, and the job "
                      "has {} rank(s)",
                      pp.stages, pp.stages, job.world),
          fmt::format("give --nproc {} (or a multiple: each stage's ranks then share every "
                      "batch, data-parallel)",
                      pp.stages));
    // Stage-major, as for inference (docs/parallel.md): a stage's replicas are neighbours.
    pp.data_parallel = job.world / pp.stages;
    pp.stage = job.rank / pp.data_parallel;
    pp.replica = job.rank % pp.data_parallel;
  } else {
    // --micro-batches alone on N ranks: one stage of N data-parallel replicas, each
    // accumulating the micro-batches of its share before their gradients are averaged.
    pp.data_parallel = job.world;
    pp.replica = job.rank;
  }
  const int64_t m = o.micro_batches.value_or(2 * int64_t{pp.stages});
  const int64_t share = rank_share(o, {pp.replica, pp.data_parallel});
  if (share % m)
    throw UsageError(
        pp.data_parallel > 1
            ? fmt::format("--batch {} gives each of {} {} {}ranks {} rows, which do not split "
                          "into {} equal micro-batches",
                          o.batch, pp.stages > 1 ? "a stage's" : "the", pp.data_parallel,
                          pp.stages > 1 ? "" : "data-parallel ", share, m)
            : fmt::format("--batch {} does not split into {} equal micro-batches", o.batch, m),
        o.micro_batches ? fmt::format("give a --micro-batches that divides {}", share)
                        : fmt::format("give --micro-batches (by default 2 x --pp = {})", m));
  pp.micro_batches = static_cast<int32_t>(m);
  return pp;
}

JobRank data_parallel_ranks(const TrainOptions& o, const JobRank& job) {
  if (!o.ranks.pp || *o.ranks.pp <= 0 || job.world % *o.ranks.pp) return o.ranks.pp ? JobRank{} : job;
  const auto replicas = static_cast<int32_t>(job.world / *o.ranks.pp);
  return {job.rank % replicas, replicas};
}

Trainer make_trainer(const std::shared_ptr<Target>& target, const Graph& model,
                     const OptimizerConfig& optimizer, const std::optional<PipelineTraining>& pp,
                     const NamedTensors& first_batch) {
  if (!pp) return Trainer(target, model, optimizer);
  // The stages' programs are compiled for one micro-batch's shapes.
  Bindings bind;
  for (ValueId in : model.inputs) {
    auto it = first_batch.find(model.values[in].name);
    if (it == first_batch.end()) continue;
    const Shape& shape = model.type(in).shape;
    for (size_t d = 0; d < shape.size() && d < it->second.shape().size(); ++d)
      if (!shape[d].is_static())
        bind[shape[d].sym] = it->second.shape()[d] / (d == 0 ? pp->micro_batches : 1);
  }
  return Trainer(target, specialize(model, bind), optimizer, *pp);
}

void resume_training(Trainer& trainer, const std::optional<std::string>& resume) {
  if (!resume) return;
  const std::filesystem::path file(*resume);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw UsageError(fmt::format("--resume {}: no such file", *resume),
                     "give the .safetensors file that --save wrote (its parameters, optimizer "
                     "state and step count)");
  try {
    trainer.load(file);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUser) throw;
    // The message names the file, the tensor, and what the model needs instead.
    throw UsageError(fmt::format("--resume: {}", e.what()),
                     "resume with the --model (and --optimizer) of the run that --save wrote it "
                     "from");
  }
}

}  // namespace rlx::cli
