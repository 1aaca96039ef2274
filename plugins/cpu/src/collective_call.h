// The collective HIR ops (core/src/ops/ops_collective.cpp) as cpu library calls on the
// process's Gloo communicator (gloo_comm.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

// The verdict for a collective op, nullopt for any other op.
std::optional<Verdict> claim_collective(const NodeSignature& s);
bool is_collective_callee(const std::string& callee);
void run_collective(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                    const std::vector<void*>& ptrs);

// An AllReduce runs in the background: the executable starts it, runs the kernels that do not
// touch its result, and waits before the first that does (cpu_executable.cpp). RLX_CPU_COLLECTIVES
// =sync runs it in place instead (to measure what the overlap gives).
class GlooComm;
struct BackgroundCollective {
  std::shared_ptr<GlooComm> comm;  // null: nothing pending
  uint64_t ticket = 0;
  void wait();  // rethrows the collective's failure; then nothing is pending
};
bool runs_in_background(const lir::CallKernel& k);
BackgroundCollective start_collective(const lir::CallKernel& k, const std::vector<lir::Buffer>& in,
                                      const std::vector<void*>& ptrs);

}  // namespace rlx::cpu
