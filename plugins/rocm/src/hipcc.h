// hipcc, ROCm's compiler driver, as the fallback when hiprtc is absent: `hipcc --genco
// --offload-arch=<arch>` compiles the HIP source in a temporary folder, and the code object is
// taken out of the offload bundle it writes. Found as $RLX_HIPCC, else hipcc on PATH, else
// $ROCM_PATH/bin/hipcc or /opt/rocm/bin/hipcc.
#pragma once
#include <string>

namespace rlx::rocm {

// The hipcc that would run, or "" with `why` set.
std::string hipcc_path(std::string* why);

// The code object of `source` for `arch`; throws rlx::Error (kCompile) with hipcc's output.
std::string hipcc_compile(const std::string& source, const std::string& arch);

}  // namespace rlx::rocm
