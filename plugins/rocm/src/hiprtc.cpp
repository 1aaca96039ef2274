#include "hiprtc.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "dynamic_library.h"
#include "hip_runtime.h"
#include "rlx/core/error.h"

namespace rlx::rocm {

namespace {

// hiprtcResult is an int enum (0: HIPRTC_SUCCESS); hiprtcProgram an opaque pointer.
using HiprtcResult = int;
using HiprtcProgram = struct HiprtcProgramOpaque*;

struct HiprtcApi {
  const char* (*hiprtcGetErrorString)(HiprtcResult) = nullptr;
  HiprtcResult (*hiprtcVersion)(int* major, int* minor) = nullptr;
  HiprtcResult (*hiprtcCreateProgram)(HiprtcProgram* program, const char* source, const char* name,
                                      int num_headers, const char* const* headers,
                                      const char* const* include_names) = nullptr;
  HiprtcResult (*hiprtcDestroyProgram)(HiprtcProgram* program) = nullptr;
  HiprtcResult (*hiprtcCompileProgram)(HiprtcProgram program, int num_options,
                                       const char* const* options) = nullptr;
  HiprtcResult (*hiprtcGetProgramLogSize)(HiprtcProgram program, size_t* bytes) = nullptr;
  HiprtcResult (*hiprtcGetProgramLog)(HiprtcProgram program, char* log) = nullptr;
  HiprtcResult (*hiprtcGetCodeSize)(HiprtcProgram program, size_t* bytes) = nullptr;
  HiprtcResult (*hiprtcGetCode)(HiprtcProgram program, char* code) = nullptr;
};

struct Loaded {
  HiprtcApi api;
  std::string identity;
  std::string error;
};

Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = cuda::open_first_library(
      rocm_library_candidates("RLX_HIPRTC", {"libhiprtc.so", "libhiprtc.so.6"}), &tried);
  std::string runtime_error;
  if (!lib && hip_runtime_api(&runtime_error)) lib = hip_runtime_handle();
  if (!lib) {
    l.error = fmt::format(
        "hiprtc not found (tried {}, and the HIP runtime: {}): install ROCm's HIP runtime "
        "(Debian: libamdhip64-5), or set RLX_HIPRTC to libhiprtc's path",
        tried, runtime_error);
    return l;
  }
  cuda::SymbolResolver resolve(lib, l.error, "hiprtc lacks {}: ROCm older than 5");
  HiprtcApi& a = l.api;
  resolve(a.hiprtcGetErrorString, "hiprtcGetErrorString");
  resolve(a.hiprtcVersion, "hiprtcVersion");
  resolve(a.hiprtcCreateProgram, "hiprtcCreateProgram");
  resolve(a.hiprtcDestroyProgram, "hiprtcDestroyProgram");
  resolve(a.hiprtcCompileProgram, "hiprtcCompileProgram");
  resolve(a.hiprtcGetProgramLogSize, "hiprtcGetProgramLogSize");
  resolve(a.hiprtcGetProgramLog, "hiprtcGetProgramLog");
  resolve(a.hiprtcGetCodeSize, "hiprtcGetCodeSize");
  resolve(a.hiprtcGetCode, "hiprtcGetCode");
  if (l.error.empty()) {
    int major = 0, minor = 0;
    a.hiprtcVersion(&major, &minor);
    l.identity = fmt::format("hiprtc {}.{}", major, minor);
    // hiprtc numbers its API (9.0 in ROCm 5.2); the runtime's version says which ROCm it is.
    int runtime = 0;
    if (const HipRuntimeApi* hip = hip_runtime_api(nullptr);
        hip && hip->hipRuntimeGetVersion(&runtime) == kHipSuccess)
      l.identity += fmt::format(" (HIP {}.{})", runtime / 10000000, runtime / 100000 % 100);
  }
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

// Destroys the program on every path out of hiprtc_compile.
struct ProgramGuard {
  const HiprtcApi& api;
  HiprtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api.hiprtcDestroyProgram(&program);
  }
};

// The architectures the code object manager behind hiprtc (libamd_comgr) compiles for, without
// feature flags ("gfx90a"), or empty when comgr does not load. Asked before compiling: ROCm 5.2's
// hiprtc crashes (a bad free in comgr) instead of failing when given an architecture it lacks.
const std::vector<std::string>& comgr_architectures() {
  static const std::vector<std::string> archs = [] {
    std::vector<std::string> out;
    void* lib = cuda::open_first_library(
        rocm_library_candidates("RLX_COMGR",
                                {"libamd_comgr.so", "libamd_comgr.so.3", "libamd_comgr.so.2"}),
        nullptr);
    if (!lib) return out;
    int (*count_isas)(size_t*) = nullptr;
    int (*isa_name)(size_t, const char**) = nullptr;
    std::string error;
    cuda::SymbolResolver resolve(lib, error, "libamd_comgr lacks {}");
    resolve(count_isas, "amd_comgr_get_isa_count");
    resolve(isa_name, "amd_comgr_get_isa_name");
    size_t n = 0;
    if (!error.empty() || count_isas(&n) != 0) return out;
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      if (isa_name(i, &name) != 0 || !name) continue;
      std::string isa = name;  // "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
      isa = isa.substr(0, isa.find(':'));
      const size_t at = isa.rfind("--");
      if (at != std::string::npos) out.push_back(isa.substr(at + 2));
    }
    return out;
  }();
  return archs;
}

}  // namespace

std::string hiprtc_identity(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty() && why) *why = l.error;
  return l.identity;
}

std::string hiprtc_compile(const std::string& source, const std::string& name,
                           const std::string& arch) {
  const Loaded& l = loaded();
  if (!l.error.empty())
    throw_unsupported(fmt::format("rocm cannot compile kernels here: {}", l.error));
  const std::vector<std::string>& known = comgr_architectures();
  const std::string arch_id = arch.substr(0, arch.find(':'));
  if (!known.empty() && std::find(known.begin(), known.end(), arch_id) == known.end())
    throw_user_error(
        fmt::format("rocm: {} cannot compile for {}: it knows {}; set RLX_ROCM_ARCH "
                    "to one of them, or use a newer ROCm",
                    l.identity, arch, fmt::join(known, ", ")));
  const HiprtcApi& api = l.api;
  ProgramGuard guard{api};
  HiprtcResult rc =
      api.hiprtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != 0)
    throw_internal_error(
        fmt::format("rocm: hiprtcCreateProgram failed: {}", api.hiprtcGetErrorString(rc)));
  const std::string arch_option = "--offload-arch=" + arch;
  const std::vector<const char*> options = {arch_option.c_str(), "-std=c++17", "-ffp-contract=off",
                                            "-w"};
  rc = api.hiprtcCompileProgram(guard.program, static_cast<int>(options.size()), options.data());
  if (rc != 0) {
    size_t n = 0;
    api.hiprtcGetProgramLogSize(guard.program, &n);
    std::string log(n, '\0');
    if (n) api.hiprtcGetProgramLog(guard.program, log.data());
    log = cuda::tidy_compiler_log(std::move(log));
    throw Error(ErrorKind::kCompile,
                fmt::format("rocm: {} could not compile the generated HIP for {} ({}); `rlx "
                            "compile --target rocm` writes the source. Log:\n{}",
                            l.identity, arch, api.hiprtcGetErrorString(rc), log));
  }
  size_t bytes = 0;
  api.hiprtcGetCodeSize(guard.program, &bytes);
  std::string code(bytes, '\0');
  if (bytes) api.hiprtcGetCode(guard.program, code.data());
  if (code.empty())
    throw_internal_error(fmt::format("rocm: {} produced no code object for {}", l.identity, arch));
  return code;
}

}  // namespace rlx::rocm
