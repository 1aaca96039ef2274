// Which GPU architecture the cuda target compiles for. Execution always uses the device's own
// compute capability (a cubin runs only on its architecture's major version). `rlx compile`
// writes for `--cuda-arch` (sm_<cc>, e.g. sm_90), else RLX_CUDA_ARCH, else the device here, else
// sm_90.
#pragma once
#include <string>

namespace rlx::cuda {

inline constexpr const char* kDefaultArch = "sm_90";

// "sm_90" for compute capability 9.0.
std::string arch_of(int major, int minor);

// Whether `arch` is sm_ followed by at least two digits and an optional letter suffix (sm_90a).
bool is_arch(const std::string& arch);

// RLX_CUDA_ARCH checked (sm_ followed by digits and an optional letter suffix: sm_90a), or "" when
// unset. Throws rlx::Error (kUser) naming the variable when it is malformed.
std::string arch_from_env();

}  // namespace rlx::cuda
