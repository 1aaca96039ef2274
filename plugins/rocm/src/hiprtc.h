// hiprtc, HIP's runtime compiler, resolved with dlopen on first use: it compiles the generated
// HIP to an AMD GPU code object for one architecture without a GPU, so `rlx compile --target rocm`
// works on any machine with ROCm's compiler libraries. Tried in order: $RLX_HIPRTC (a path),
// libhiprtc.so, libhiprtc.so.6 (ROCm 6 ships hiprtc as its own library), then the HIP runtime
// itself (ROCm 5, Debian 12's libamdhip64-5, exports hiprtc from libamdhip64).
#pragma once
#include <string>

namespace rlx::rocm {

// "hiprtc 9.0 (HIP 5.2)", or "" with `why` set when hiprtc is not here.
std::string hiprtc_identity(std::string* why);

// Compiles `source` (named `name` in diagnostics) for `arch` ("gfx90a") with the target's options:
// C++17, -ffp-contract=off (no contraction of a * b + c: results match the cpu target). Returns
// the code object (an ELF for EM_AMDGPU). Throws rlx::Error: kUnsupported when hiprtc is absent,
// kCompile with hiprtc's log when it rejects the source.
std::string hiprtc_compile(const std::string& source, const std::string& name,
                           const std::string& arch);

}  // namespace rlx::rocm
