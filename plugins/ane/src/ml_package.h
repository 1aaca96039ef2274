// An ML Program package as CoreML loads it:
//   NAME.mlpackage/Manifest.json                            the package's items
//   NAME.mlpackage/Data/com.apple.CoreML/model.mlmodel      the Model protobuf
//   NAME.mlpackage/Data/com.apple.CoreML/weights/weight.bin the weights (blob storage)
// plus, beside the package, io.json: each input and output as rlx sees it and as the package
// holds it, and the index checks a runner must look at.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "mil_lowering.h"
#include "rlx/core/target.h"

namespace rlx::ane {

// How CoreML should place the model's work (MLComputeUnits); stored in the package's metadata
// for the runner, as CoreML takes it at load time, not from the file.
inline constexpr const char* kComputeUnits = "ALL,CPU_AND_NE,CPU_ONLY,CPU_AND_GPU";

struct PackageOptions {
  Deployment deployment;
  std::string compute_units = "ALL";
};

inline constexpr const char* kPackageName = "model.mlpackage";

std::vector<Artifact> write_package(MilProgram& program, const PackageOptions& options,
                                    const std::filesystem::path& dir);

}  // namespace rlx::ane
