// NVRTC, the CUDA runtime compiler, resolved with dlopen on first use: it compiles the generated
// CUDA C++ to PTX or to a cubin for one architecture without a driver or a device, so `rlx
// compile --target cuda` works on any machine that has the toolkit's libnvrtc. Tried in order:
// $RLX_NVRTC (a path), libnvrtc.so, then the versioned sonames of CUDA 13 down to 11.2, each also
// under $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
#pragma once
#include <string>

namespace rlx::cuda {

struct NvrtcVersion {
  int major = 0, minor = 0;
};

// The loaded NVRTC's version, or nullopt-like {0, 0} with `why` set when none loads.
bool nvrtc_available(std::string* why, NvrtcVersion* version = nullptr);

// What NVRTC makes of one module.
enum class NvrtcOutput { kPtx, kCubin };

// Compiles `source` (named `name` in diagnostics) for `arch` ("sm_90": a cubin; for kPtx the
// virtual architecture compute_90 is used) with the target's options: C++17, --fmad=false (no
// contraction of a * b + c: results match the cpu target), IEEE division and square root.
// Returns the PTX text or the cubin bytes. Throws rlx::Error: kUnsupported when NVRTC is absent,
// kCompile with NVRTC's log when it rejects the source.
std::string nvrtc_compile(const std::string& source, const std::string& name,
                          const std::string& arch, NvrtcOutput output);

}  // namespace rlx::cuda
