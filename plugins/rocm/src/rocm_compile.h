// How the rocm target turns HIP into an AMD GPU code object: hiprtc when it loads, else hipcc
// (hiprtc.h, hipcc.h); and which architecture it compiles for. Execution uses the device's own
// architecture; `rlx compile` writes for RLX_ROCM_ARCH (gfx<id>, e.g. gfx90a, gfx942) when set,
// else the device here, else gfx90a: the CLI has no per-target options yet, so the choice travels
// in the environment (as cuda's RLX_CUDA_ARCH).
#pragma once
#include <string>

namespace rlx::rocm {

inline constexpr const char* kDefaultArch = "gfx90a";

// RLX_ROCM_ARCH checked (gfx followed by 3 or 4 hex digits or letters, optionally with feature
// flags: gfx90a:xnack-), or "" when unset. Throws rlx::Error (kUser) naming the variable when it
// is malformed.
std::string arch_from_env();

// The compiler compile_hip() uses ("hiprtc 9.0 (HIP 5.2)", "hipcc (/usr/bin/hipcc)"), or "" with
// `why` naming what is missing.
std::string hip_compiler(std::string* why);

// The code object of `source` for `arch` (an ELF for EM_AMDGPU), from hiprtc or hipcc.
std::string compile_hip(const std::string& source, const std::string& arch);

}  // namespace rlx::rocm
