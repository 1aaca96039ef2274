// AMD GPU code objects: what hiprtc returns is one (an ELF for EM_AMDGPU); what `hipcc --genco`
// writes is a clang offload bundle holding one per architecture (and an empty host entry).
#pragma once
#include <string>

namespace rlx::rocm {

// `bytes` when it is a code object; the code object for `arch` when it is an offload bundle.
// Throws rlx::Error (kCompile) naming `what` when it is neither, or holds nothing for `arch`.
std::string code_object_for(const std::string& bytes, const std::string& arch,
                            const std::string& what);

}  // namespace rlx::rocm
