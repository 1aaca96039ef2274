// Launches that compute the same values on every run: loop kernels that read only the program's
// constants (and what other such launches wrote), such as the widening of f16-stored weights
// when a model runs in f32. A device program's constants are its own data, uploaded once and
// never rebound, so the executor runs these launches when it loads the program, into buffers of
// their own outside the arena, and leaves them out of every run (the cpu target hoists the same
// kernels: CpuExecutable::plan_hoisting).
#pragma once
#include "module_plan.h"

namespace rlx::gpu_host {

// Sets Launch::once on each launch of `plan` that qualifies: its kernel wrote `writes` (all
// temporaries no other kernel writes), copies nothing first, checks no index, uses no scratch,
// and every other buffer it binds is a constant or written by an earlier `once` launch.
// RLX_GPU_ONCE=0 leaves every launch in the run (to compare).
void mark_once_launches(const lir::Program& program, ModulePlan& plan);

}  // namespace rlx::gpu_host
