// Communicators of the collective ops (docs/parallel.md): the `comm` attribute names the ranks a
// collective exchanges with, as a partition of the job's ranks that every rank computes the same
// way from the job's size, so no table of ranks travels in the graph:
//   "world"     every rank of the job
//   "block:G"   consecutive blocks of G ranks: {0..G-1}, {G..2G-1}, ... (a tensor-parallel
//               group when a job is DP x TP with TP = G)
//   "stride:S"  the ranks equal modulo S: {0, S, 2S, ...}, {1, S+1, ...}, ... (the matching
//               data-parallel group)
// A rank's index within its group is its position in the group's ascending list of ranks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rlx {

struct Communicator {
  enum class Kind { kWorld, kBlock, kStride } kind = Kind::kWorld;
  int64_t n = 0;  // G or S

  // The ranks of the group holding `rank` in a job of `world` ranks, ascending. Throws a user
  // error naming the communicator when `world` does not divide into its groups.
  std::vector<int32_t> group_of(int32_t rank, int32_t world) const;
  // The number of ranks of each group in a job of `world` ranks (the same check).
  int32_t group_size(int32_t world) const;
  std::string name() const;  // "block:2"
};

// The communicator `text` names, or nullopt when it is not one of the forms above.
std::optional<Communicator> parse_communicator(const std::string& text);

}  // namespace rlx
