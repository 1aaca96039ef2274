#include "nvrtc.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "dynamic_library.h"
#include "rlx/core/error.h"

namespace rlx::cuda {

namespace {

// nvrtcResult is an int enum (0: NVRTC_SUCCESS); nvrtcProgram an opaque pointer.
using NvrtcResult = int;
using NvrtcProgram = struct NvrtcProgramOpaque*;

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(NvrtcResult) = nullptr;
  NvrtcResult (*nvrtcVersion)(int* major, int* minor) = nullptr;
  NvrtcResult (*nvrtcCreateProgram)(NvrtcProgram* program, const char* source, const char* name,
                                    int num_headers, const char* const* headers,
                                    const char* const* include_names) = nullptr;
  NvrtcResult (*nvrtcDestroyProgram)(NvrtcProgram* program) = nullptr;
  NvrtcResult (*nvrtcCompileProgram)(NvrtcProgram program, int num_options,
                                     const char* const* options) = nullptr;
  NvrtcResult (*nvrtcGetProgramLogSize)(NvrtcProgram program, size_t* bytes) = nullptr;
  NvrtcResult (*nvrtcGetProgramLog)(NvrtcProgram program, char* log) = nullptr;
  NvrtcResult (*nvrtcGetPTXSize)(NvrtcProgram program, size_t* bytes) = nullptr;
  NvrtcResult (*nvrtcGetPTX)(NvrtcProgram program, char* ptx) = nullptr;
  NvrtcResult (*nvrtcGetCUBINSize)(NvrtcProgram program, size_t* bytes) = nullptr;
  NvrtcResult (*nvrtcGetCUBIN)(NvrtcProgram program, char* cubin) = nullptr;
};

struct Loaded {
  NvrtcApi api;
  NvrtcVersion version;
  std::string error;
};

std::vector<std::string> candidates() {
  std::vector<std::string> names;
  if (const char* p = std::getenv("RLX_NVRTC"); p && *p) names.push_back(p);
  std::vector<std::string> sonames = {"libnvrtc.so"};
  for (const char* v : {"13", "12", "11.2"}) sonames.push_back(fmt::format("libnvrtc.so.{}", v));
  std::vector<std::string> dirs = {""};
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    dirs.push_back(std::string(home) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  for (const std::string& dir : dirs)
    for (const std::string& so : sonames) names.push_back(dir + so);
  return names;
}

Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = open_first_library(candidates(), &tried);
  if (!lib) {
    l.error = fmt::format(
        "NVRTC (libnvrtc.so) not found (tried {}): install the CUDA toolkit's "
        "cuda-nvrtc, or set RLX_NVRTC to its path",
        tried);
    return l;
  }
  SymbolResolver resolve(lib, l.error, "libnvrtc lacks {}: NVRTC older than CUDA 11.2");
  NvrtcApi& a = l.api;
  resolve(a.nvrtcGetErrorString, "nvrtcGetErrorString");
  resolve(a.nvrtcVersion, "nvrtcVersion");
  resolve(a.nvrtcCreateProgram, "nvrtcCreateProgram");
  resolve(a.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  resolve(a.nvrtcCompileProgram, "nvrtcCompileProgram");
  resolve(a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  resolve(a.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  resolve(a.nvrtcGetPTXSize, "nvrtcGetPTXSize");
  resolve(a.nvrtcGetPTX, "nvrtcGetPTX");
  resolve(a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  resolve(a.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  if (l.error.empty()) a.nvrtcVersion(&l.version.major, &l.version.minor);
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

// Destroys the program on every path out of nvrtc_compile.
struct ProgramGuard {
  const NvrtcApi& api;
  NvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program) api.nvrtcDestroyProgram(&program);
  }
};

}  // namespace

bool nvrtc_available(std::string* why, NvrtcVersion* version) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return false;
  }
  if (version) *version = l.version;
  return true;
}

std::string nvrtc_compile(const NvrtcSource& source, const std::string& arch, NvrtcOutput output) {
  const Loaded& l = loaded();
  const std::string& target = source.target;
  if (!l.error.empty())
    throw_unsupported(fmt::format("{} cannot compile kernels here: {}", target, l.error));
  const NvrtcApi& api = l.api;
  if (arch.rfind("sm_", 0) != 0)
    throw_user_error(fmt::format(
        "{}: '{}' is not a real GPU architecture; give one as sm_<cc> (sm_90)", target, arch));
  std::vector<const char*> header_texts, header_names;
  for (const NvrtcHeader& h : source.headers) {
    header_texts.push_back(h.text.c_str());
    header_names.push_back(h.name.c_str());
  }
  ProgramGuard guard{api};
  NvrtcResult rc = api.nvrtcCreateProgram(&guard.program, source.text.c_str(), source.name.c_str(),
                                          static_cast<int>(header_texts.size()),
                                          header_texts.data(), header_names.data());
  if (rc != 0)
    throw_internal_error(
        fmt::format("{}: nvrtcCreateProgram failed: {}", target, api.nvrtcGetErrorString(rc)));
  // PTX is written for the virtual architecture of the same compute capability, so a driver can
  // JIT it for that device or a newer one; a cubin is for exactly `arch`.
  const std::string arch_option =
      "--gpu-architecture=" + (output == NvrtcOutput::kPtx ? "compute_" + arch.substr(3) : arch);
  const std::vector<const char*> options = {arch_option.c_str(), "--std=c++17",      "--fmad=false",
                                            "--prec-div=true",   "--prec-sqrt=true", "--ftz=false",
                                            "--disable-warnings"};
  rc = api.nvrtcCompileProgram(guard.program, static_cast<int>(options.size()), options.data());
  if (rc != 0) {
    size_t n = 0;
    api.nvrtcGetProgramLogSize(guard.program, &n);
    std::string log(n, '\0');
    if (n) api.nvrtcGetProgramLog(guard.program, log.data());
    log = tidy_compiler_log(std::move(log));
    throw Error(
        ErrorKind::kCompile,
        fmt::format(
            "{0}: NVRTC {1}.{2} could not compile the generated {3} for {4} ({5}); `rlx compile "
            "--target {0}` writes the source. Log:\n{6}",
            target, l.version.major, l.version.minor, source.language, arch,
            api.nvrtcGetErrorString(rc), log));
  }
  size_t bytes = 0;
  std::string out;
  if (output == NvrtcOutput::kPtx) {
    api.nvrtcGetPTXSize(guard.program, &bytes);
    out.resize(bytes);
    if (bytes) api.nvrtcGetPTX(guard.program, out.data());
    while (!out.empty() && out.back() == '\0') out.pop_back();
  } else {
    api.nvrtcGetCUBINSize(guard.program, &bytes);
    out.resize(bytes);
    if (bytes) api.nvrtcGetCUBIN(guard.program, out.data());
  }
  if (out.empty())
    throw_internal_error(fmt::format("{}: NVRTC produced no {} for {}", target,
                                     output == NvrtcOutput::kPtx ? "PTX" : "cubin", arch));
  return out;
}

}  // namespace rlx::cuda
