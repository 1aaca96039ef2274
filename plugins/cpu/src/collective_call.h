// The collective HIR ops (core/src/ops/ops_collective.cpp) as cpu library calls on the
// process's Gloo communicator (gloo_comm.h).
#pragma once
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

}  // namespace rlx::cpu
