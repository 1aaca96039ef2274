// Data-parallel replicas of a split model (docs/parallel.md): a job of W ranks that splits the
// model over G = --tp x --pp ranks holds W / G copies of it, copy i on ranks [i G, (i + 1) G), each
// laid out inside its group as a job of G ranks would be (stage-major). The importer builds a
// rank's shard and stage as for a job of G ranks; place_in_replica then moves the graph's
// collectives into the rank's group.
#pragma once
#include <cstdint>

#include "rlx/core/graph.h"

namespace rlx::cli {

struct Replicas {
  int32_t index = 0, count = 1;  // this rank's copy, of how many
  int32_t group = 1;             // ranks per copy
  int32_t first_rank() const { return index * group; }
};

// The copies of a job of `world` ranks with `group` ranks each; `rank` is this one's.
Replicas replicas_of(int32_t rank, int32_t world, int32_t group);

// This rank's copy in the job (ranks.h's job_rank) under --tp and --pp: a single copy when they
// are not given or the job has just their ranks.
struct RankOptions;
Replicas replicas_of_job(const RankOptions& ranks);

// Confines g's collectives (and its regions') to r's group: a collective over the whole job
// takes the communicator "block:G" (a Broadcast's root, an index within the group, stays the
// group's rank it named); Send's and Recv's peers, ranks of the job, move by the group's first
// rank. Collectives that already name a group of G or fewer consecutive ranks stay. A no-op
// for a single copy.
void place_in_replica(Graph& g, const Replicas& r);

}  // namespace rlx::cli
