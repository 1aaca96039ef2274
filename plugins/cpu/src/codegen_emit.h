// `rlx compile -o DIR` for the cpu target: the C translation unit the target compiles, the built
// shared object (one pair per module: cpu_kernels.{c,so}, then cpu_kernels.N.{c,so} for while
// loops' regions), and cpu_build.json, a build report (kind "build-report") whose "stages_ms"
// object gives the time of each build stage (codegen, compiler, load) and whose "modules" list
// each object with the hash of its source, by which a loaded folder's objects are found
// (prebuilt_kernels.h). The CLI folds any artifact of that kind into `--timings`.
#pragma once
#include <filesystem>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/core/target.h"

namespace rlx::cpu {

std::vector<Artifact> emit_cpu_artifacts(const lir::Program& program, const std::filesystem::path& dir);

// What can_execute reports: yes, with how loop kernels run here ("kernels compiled by gcc ...",
// or "kernels interpreted: no C compiler found (install gcc)").
Verdict cpu_execution_verdict();

}  // namespace rlx::cpu
