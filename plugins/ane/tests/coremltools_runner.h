// The ane target with a package runner for this machine: coremltools (PyPI, in the test venv)
// loads each package, checks its types and evaluates its MIL program with its own NumPy
// implementation of every op (coremltools_check.py). What this proves: the package is one
// coremltools reads, every op's types are the ones coremltools infers, and the MIL program
// computes what rlx's graph computes, as MIL's reference semantics define it. What it does not:
// how CoreML on an Apple device schedules or rounds it (docs/targets.md, ane).
#pragma once
#include <memory>
#include <string>

#include "ane_target.h"
#include "rlx/core/safetensors.h"

namespace rlx::ane::test {

// Empty when the test Python has coremltools, else why not (for GTEST_SKIP).
std::string coremltools_missing();

// The checker's JSON line for a written package (op types, typed values); throws on failure.
std::string check_package(const std::filesystem::path& package);

// The package's outputs as coremltools' value inference computes them from `inputs` (by feature
// name, in the package's layout: io.json); the files go to `scratch`.
TensorMap evaluate_package(const std::filesystem::path& package, const TensorMap& inputs,
                           const std::filesystem::path& scratch);

// The op types coremltools' own MIL builder writes for the dense block of the native-ops test
// (mil_builder_reference.py), as a JSON list.
std::string builder_reference_ops();

class AneOnCoreMlTools final : public AneTarget {
 protected:
  std::shared_ptr<PackageRunner> open_runner() override;
};

std::shared_ptr<Target> ane_on_coremltools();

}  // namespace rlx::ane::test
