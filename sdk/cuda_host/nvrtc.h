// NVRTC, the CUDA runtime compiler, resolved with dlopen on first use: it compiles the generated
// CUDA C++ to PTX or to a cubin for one architecture without a driver or a device, so `rlx
// compile --target cuda` works on any machine that has the toolkit's libnvrtc. Tried in order:
// $RLX_NVRTC (a path), libnvrtc.so, then the versioned sonames of CUDA 13 down to 11.2, each also
// under $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
#pragma once
#include <string>
#include <vector>

namespace rlx::cuda {

struct NvrtcVersion {
  int major = 0, minor = 0;
};

// The loaded NVRTC's version, or nullopt-like {0, 0} with `why` set when none loads.
bool nvrtc_available(std::string* why, NvrtcVersion* version = nullptr);

// What NVRTC makes of one module.
enum class NvrtcOutput { kPtx, kCubin };

// A header the source includes by `name`, given to NVRTC in memory (NVRTC reads no system
// headers): how the rocm target's HIP source finds its hip/hip_runtime.h under NVRTC.
struct NvrtcHeader {
  std::string name;  // as written in the #include: "hip/hip_runtime.h"
  std::string text;
};

// What is compiled and for whom: `target` prefixes messages ("cuda", "rocm"), `language` names
// the source in them ("CUDA C++", "HIP").
struct NvrtcSource {
  const std::string& text;
  std::string name;  // in diagnostics: "cuda_kernels.cu"
  std::string target = "cuda";
  std::string language = "CUDA C++";
  std::vector<NvrtcHeader> headers;
};

// Compiles `source` for `arch` ("sm_90": a cubin; for kPtx the
// virtual architecture compute_90 is used) with the target's options: C++17, --fmad=false (no
// contraction of a * b + c: results match the cpu target), IEEE division and square root.
// Returns the PTX text or the cubin bytes. Throws rlx::Error: kUnsupported when NVRTC is absent,
// kCompile with NVRTC's log when it rejects the source.
std::string nvrtc_compile(const NvrtcSource& source, const std::string& arch, NvrtcOutput output);

}  // namespace rlx::cuda
