// Kernel objects that `rlx compile` put into a deployable folder, made available to the cpu
// target's compile() so that loading the folder runs no C compiler (the "rlx.deployable"
// extension, rlx/sdk/deployable.h).
//
// A prebuilt object is found by the content hash of the module source it was built from, the
// same text codegen_module renders for a program: a program whose kernels the folder does not
// hold renders to another text and is built as usual, so registering a folder can never hand a
// program the wrong code. Registrations last for the process, like the kernel cache.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rlx/core/lir.h"
#include "rlx/sdk/deployable.h"

namespace rlx::cpu {

// The programs the cpu executable builds one kernel module for, as it builds them: `program`
// with GEMM epilogues fused, then the region programs of its call kernels (while), depth first.
std::vector<lir::Program> module_programs(const lir::Program& program);

// Whether any folder registered objects (the common case, none, costs no rendering).
bool has_prebuilt();

// The object registered for this module source's hash, if any.
std::optional<std::filesystem::path> find_prebuilt(const std::string& source_hash);

// Whether RLX_CPU_KERNELS asks for interpretation, which prebuilt objects do not override.
bool interpretation_requested();

// The extension's function table.
const sdk::RlxDeployableV1* deployable_extension();

}  // namespace rlx::cpu
