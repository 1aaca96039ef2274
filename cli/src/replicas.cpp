#include "replicas.h"

#include <fmt/format.h>

#include "ranks.h"
#include "rlx/core/communicator.h"
#include "rlx/core/error.h"
#include "rlx/core/op_registry.h"

namespace rlx::cli {

Replicas replicas_of(int32_t rank, int32_t world, int32_t group) {
  if (group < 1 || world % group)
    throw_internal_error(fmt::format("{} ranks do not hold copies of {} ranks", world, group));
  return {rank / group, world / group, group};
}

Replicas replicas_of_job(const RankOptions& o) {
  const JobRank job = job_rank();
  const int64_t group = o.tp.value_or(1) * o.pp.value_or(1);
  if ((!o.tp && !o.pp) || group >= job.world || job.world % group) return {0, 1, job.world};
  return replicas_of(job.rank, job.world, static_cast<int32_t>(group));
}

void place_in_replica(Graph& g, const Replicas& r) {
  if (r.count == 1) return;
  const OpRegistry& ops = OpRegistry::instance();
  for (Node& n : g.nodes) {
    for (auto& region : n.regions) place_in_replica(*region, r);
    const OpDef* def = ops.find(n.op);
    if (!def || !def->communicates) continue;
    if (n.op == "Send" || n.op == "Recv") {
      n.attrs["peer"] = n.attr_int("peer", -1) + r.first_rank();
      continue;
    }
    const std::optional<Communicator> c = parse_communicator(n.attr_string("comm", "world"));
    if (c && c->kind == Communicator::Kind::kWorld) {
      n.attrs["comm"] = fmt::format("block:{}", r.group);
    } else if (!c || c->kind != Communicator::Kind::kBlock || r.group % c->n) {
      throw_user_error(fmt::format(
          "%{} ({}) exchanges over the communicator \"{}\", which does not fit inside a copy of "
          "the model on {} ranks; run the job with --tp x --pp ranks",
          g.values[n.outputs[0]].name, n.op, n.attr_string("comm", "world"), r.group));
    }
  }
}

}  // namespace rlx::cli
