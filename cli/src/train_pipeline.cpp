// `rlx train --pp P [--micro-batches M]`: the pipelined step's options
// (rlx/core/pipeline_training.h) shared by the three model paths.
#include <fmt/format.h>

#include "errors.h"
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
  } else if (job.world > 1) {
    throw UsageError("--micro-batches with data-parallel ranks is not supported yet",
                     "drop --micro-batches, or train in one process (or with --pp)");
  }
  const int64_t m = o.micro_batches.value_or(2 * int64_t{pp.stages});
  const int64_t share = rank_share(o, {pp.replica, pp.data_parallel});
  if (share % m)
    throw UsageError(
        pp.data_parallel > 1
            ? fmt::format("--batch {} gives each of a stage's {} ranks {} rows, which do not split "
                          "into {} equal micro-batches",
                          o.batch, pp.data_parallel, share, m)
            : fmt::format("--batch {} does not split into {} equal micro-batches", o.batch, m),
        o.micro_batches ? std::string("give a --micro-batches that divides --batch")
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

}  // namespace rlx::cli
